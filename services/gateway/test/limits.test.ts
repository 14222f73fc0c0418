import { createKey } from '@tollgate/control-plane/test-kit';
import { describe, expect, it } from 'vitest';
import { bodyFor, type Reply, uniqueTag, useStack } from './support.ts';

// Two gateways on one Redis; windows of an hour (the stack's), so no test straddles one.
const t = useStack('gw-limits', { gateways: 2 });
const CREDITS = 10_000_000n;
const WINDOW_SECONDS = 3600;
const USAGE = 'input_tokens=10,output_tokens=10';
const CHAT_COST = 10n * 2n + 10n * 8n;

function chat(secret: string, gateway = 0, directives = USAGE): Promise<Reply> {
  return t.post('/v1/chat/completions', secret, bodyFor('/v1/chat/completions', 'gpt-test', directives), {
    gateway,
  });
}

function expectRetryAfter(reply: Reply, atMost: number): number {
  const seconds = Number(reply.headers.get('retry-after'));
  expect(Number.isInteger(seconds)).toBe(true);
  expect(seconds).toBeGreaterThanOrEqual(1);
  expect(seconds).toBeLessThanOrEqual(atMost);
  return seconds;
}

/** Resolves when the mock has received the next request (it then holds it for its `delay`). */
function nextUpstreamRequest(): Promise<void> {
  return new Promise((resolve) => t.stack.mock.server.once('request', () => resolve()));
}

describe('per-key request ceiling', () => {
  it('admits R requests per window, then answers rate_limit_exceeded with Retry-After; the GET endpoints count too', async () => {
    const key = await t.key({ credits: CREDITS, limits: { requestsPerMinute: 4 } });
    expect((await chat(key.secret)).status).toBe(200);
    expect((await t.get('/v1/models', key.secret)).status).toBe(200);
    expect((await t.get('/v1/key/status', key.secret)).status).toBe(200);
    expect(
      (
        await t.post(
          '/v1/messages/count_tokens',
          key.secret,
          bodyFor('/v1/messages/count_tokens', 'claude-test'),
        )
      ).status,
    ).toBe(200);

    const calls = t.upstreamCalls();
    const refusals: Reply[] = [
      await chat(key.secret),
      await chat(key.secret, 1),
      await t.post('/v1/messages', key.secret, bodyFor('/v1/messages', 'claude-test')),
      await t.post('/v1/responses', key.secret, bodyFor('/v1/responses', 'gpt-test')),
      await t.post(
        '/v1/messages/count_tokens',
        key.secret,
        bodyFor('/v1/messages/count_tokens', 'claude-test'),
      ),
      await t.get('/v1/models', key.secret, { gateway: 1 }),
      await t.get('/v1/key/status', key.secret),
    ];
    for (const reply of refusals) {
      t.expectError(reply, 429, 'rate_limit_exceeded');
      expectRetryAfter(reply, WINDOW_SECONDS);
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.stack.settled();
    // Only the one metered call that went through was charged.
    expect(await t.stack.balances(key.accountId)).toMatchObject({
      credits: CREDITS - CHAT_COST,
      reservedCredits: 0n,
    });
    expect((await t.stack.reservations(key.accountId)).map((row) => row.status)).toEqual(['settled']);
  });

  it('tells the budget left in x-ratelimit-* headers on every answer, across gateways, and on the refusal', async () => {
    const key = await t.key({ credits: CREDITS, limits: { requestsPerMinute: 4 } });
    const budgetOf = (reply: Reply) => ({
      limit: reply.headers.get('x-ratelimit-limit-requests'),
      remaining: reply.headers.get('x-ratelimit-remaining-requests'),
      reset: reply.headers.get('x-ratelimit-reset-requests'),
    });
    const answers = [
      await chat(key.secret),
      await t.get('/v1/key/status', key.secret, { gateway: 1 }),
      await t.get('/v1/models', key.secret),
      await t.post(
        '/v1/messages/count_tokens',
        key.secret,
        bodyFor('/v1/messages/count_tokens', 'claude-test'),
      ),
    ];
    expect(answers.map((reply) => reply.status)).toEqual([200, 200, 200, 200]);
    expect(answers.map((reply) => budgetOf(reply).remaining)).toEqual(['3', '2', '1', '0']);
    for (const reply of answers) {
      expect(budgetOf(reply).limit).toBe('4');
      const seconds = Number(budgetOf(reply).reset?.replace(/s$/, ''));
      expect(budgetOf(reply).reset).toMatch(/^\d+s$/);
      expect(seconds).toBeGreaterThanOrEqual(1);
      expect(seconds).toBeLessThanOrEqual(WINDOW_SECONDS);
    }
    const refused = await t.post(
      '/v1/messages',
      key.secret,
      { ...bodyFor('/v1/messages', 'claude-test'), stream: true },
      { gateway: 1 },
    );
    t.expectError(refused, 429, 'rate_limit_exceeded');
    expect(budgetOf(refused)).toMatchObject({ limit: '4', remaining: '0' });
    expect(Number(budgetOf(refused).reset?.replace(/s$/, ''))).toBe(
      Number(refused.headers.get('retry-after')),
    );
  });

  it('a streamed answer carries the budget in its headers', async () => {
    const key = await t.key({ credits: CREDITS, limits: { requestsPerMinute: 10 } });
    const reply = await t.post('/v1/chat/completions', key.secret, {
      ...bodyFor('/v1/chat/completions', 'gpt-test', USAGE),
      stream: true,
    });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/text\/event-stream/);
    expect(reply.headers.get('x-ratelimit-limit-requests')).toBe('10');
    expect(reply.headers.get('x-ratelimit-remaining-requests')).toBe('9');
  });

  it('two gateways on one Redis admit R per window between them, not 2R', async () => {
    const ceiling = 6;
    const key = await t.key({ credits: CREDITS, limits: { requestsPerMinute: ceiling, concurrency: 50 } });
    const tag = uniqueTag('shared');
    const replies = await Promise.all(
      Array.from({ length: 4 * ceiling }, (_, index) => chat(key.secret, index % 2, `tag=${tag},${USAGE}`)),
    );
    const admitted = replies.filter((reply) => reply.status === 200);
    expect(admitted).toHaveLength(ceiling);
    for (const reply of replies.filter((reply) => reply.status !== 200)) {
      t.expectError(reply, 429, 'rate_limit_exceeded');
    }
    expect(t.tagged(tag)).toBe(ceiling);
    // Each gateway is refused on its own next request as well.
    for (const gateway of [0, 1])
      t.expectError(await t.get('/v1/models', key.secret, { gateway }), 429, 'rate_limit_exceeded');
    await t.stack.settled();
    expect(await t.stack.balances(key.accountId)).toMatchObject({
      credits: CREDITS - BigInt(ceiling) * CHAT_COST,
      reservedCredits: 0n,
    });
  });

  it('counts each key on its own', async () => {
    const first = await t.key({ credits: CREDITS, limits: { requestsPerMinute: 1 } });
    const second = await t.key({ credits: CREDITS, limits: { requestsPerMinute: 1 } });
    expect((await t.get('/v1/models', first.secret)).status).toBe(200);
    t.expectError(await t.get('/v1/models', first.secret), 429, 'rate_limit_exceeded');
    expect((await t.get('/v1/models', second.secret, { gateway: 1 })).status).toBe(200);
  });
});

describe('per-package rate limit', () => {
  it('is shared by every key of the account drawing on the package, across gateways', async () => {
    const first = await t.key({ packages: ['pro'], limits: { requestsPerMinute: 100 } });
    const deps = t.stack.controlPlane.deps;
    // Lower this entitlement's ceiling from the package's 1000 to 3 per window.
    await deps.db
      .updateTable('entitlements')
      .set({ requests_per_minute: 3 })
      .where('account_id', '=', first.accountId)
      .execute();
    await deps.events.publish({ type: 'account.changed', accountId: first.accountId });
    const second = await createKey(deps, first.accountId, {
      name: 'second',
      scope: null,
      limits: { requestsPerMinute: 100 },
    });
    t.remember(second.secret);

    expect((await chat(first.secret, 0)).status).toBe(200);
    expect((await chat(second.secret, 1)).status).toBe(200);
    expect((await chat(first.secret, 1)).status).toBe(200);
    const calls = t.upstreamCalls();
    for (const [secret, gateway] of [
      [second.secret, 0],
      [first.secret, 1],
    ] as const) {
      const reply = await chat(secret, gateway);
      t.expectError(reply, 429, 'rate_limit_exceeded');
      expectRetryAfter(reply, WINDOW_SECONDS);
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.stack.settled();
    expect(await t.stack.balances(first.accountId)).toMatchObject({
      tokens: 100_000n - 3n * 20n,
      reservedTokens: 0n,
    });
  });
});

describe('concurrency', () => {
  it('refuses a request beyond the in-flight ceiling with concurrency_limit_exceeded and a short Retry-After', async () => {
    const key = await t.key({ credits: CREDITS, limits: { concurrency: 1, requestsPerMinute: 100 } });
    const slowTag = uniqueTag('slow');
    const calls = t.upstreamCalls();
    const arrived = nextUpstreamRequest();
    const slow = chat(key.secret, 0, `tag=${slowTag},delay=1500,${USAGE}`);
    await arrived;

    for (const gateway of [0, 1]) {
      const reply = await chat(key.secret, gateway);
      t.expectError(reply, 429, 'concurrency_limit_exceeded');
      expectRetryAfter(reply, 5);
      const responses = await t.post('/v1/responses', key.secret, bodyFor('/v1/responses', 'gpt-test'), {
        gateway,
      });
      t.expectError(responses, 429, 'concurrency_limit_exceeded');
    }
    // The unmetered endpoints need a slot too (every gateway call does).
    t.expectError(await t.get('/v1/models', key.secret), 429, 'concurrency_limit_exceeded');
    // Only the slow call reached the upstream.
    expect(t.upstreamCalls()).toBe(calls + 1);

    expect((await slow).status).toBe(200);
    // The slot is free again once the first call has ended (same gateway; see below).
    expect((await chat(key.secret, 0)).status).toBe(200);
    await t.stack.settled();
    expect(await t.stack.balances(key.accountId)).toMatchObject({
      credits: CREDITS - 2n * CHAT_COST,
      reservedCredits: 0n,
    });
    expect((await t.stack.reservations(key.accountId)).map((row) => row.status)).toEqual([
      'settled',
      'settled',
    ]);
  });

  // One gateway: its release rides along with its next acquire. Through another gateway the
  // release is a separate Redis command that a loaded Redis may run after that gateway's acquire.
  it('frees the slot of a call that was refused or failed', async () => {
    const poor = await t.key({ credits: 100n, limits: { concurrency: 1, requestsPerMinute: 100 } });
    for (let round = 0; round < 3; round += 1) {
      t.expectError(await chat(poor.secret), 402, 'insufficient_credits');
    }
    const key = await t.key({ credits: CREDITS, limits: { concurrency: 1, requestsPerMinute: 100 } });
    for (let round = 0; round < 3; round += 1) {
      t.expectError(await chat(key.secret, 0, 'status=500'), 503, 'upstream_unavailable');
      t.expectError(await chat(key.secret, 0, 'status=400'), 400, 'upstream_rejected');
    }
    expect((await chat(key.secret)).status).toBe(200);
  });
});
