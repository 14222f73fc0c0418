import { createKey } from '@tollgate/control-plane/test-kit';
import { describe, expect, it } from 'vitest';
import { bodyFor, type Reply, uniqueTag, useStack } from './support.ts';

const t = useStack('gw-unmetered');

function countTokens(secret: string, body: unknown): Promise<Reply> {
  return t.post('/v1/messages/count_tokens', secret, body);
}

describe('POST /v1/messages/count_tokens', () => {
  it('counts locally: no upstream call, no reservation, nothing spent, even on an empty balance', async () => {
    const empty = await t.key();
    const funded = await t.key({ credits: 5_000n });
    const calls = t.upstreamCalls();
    const short = await countTokens(empty.secret, bodyFor('/v1/messages/count_tokens', 'claude-test'));
    expect(short.status, short.text).toBe(200);
    const shortCount = JSON.parse(short.text) as { input_tokens: number };
    expect(Object.keys(shortCount)).toEqual(['input_tokens']);
    expect(Number.isInteger(shortCount.input_tokens)).toBe(true);
    expect(shortCount.input_tokens).toBeGreaterThan(0);
    expect(shortCount.input_tokens).toBeLessThan(30);

    const long = await countTokens(funded.secret, {
      model: 'claude-test',
      system: 'You are terse.',
      messages: [{ role: 'user', content: 'hello '.repeat(1000) }],
      tools: [
        { name: 'lookup', description: 'Looks things up.', input_schema: { type: 'object', properties: {} } },
      ],
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    expect(long.status, long.text).toBe(200);
    const longCount = (JSON.parse(long.text) as { input_tokens: number }).input_tokens;
    // About one token per repeated word, plus the system prompt, the tool and the tool-use system
    // prompt the provider adds when tools are present (530 at most).
    expect(longCount).toBeGreaterThan(1000 + 530);
    expect(longCount).toBeLessThan(1200 + 530);

    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(empty, {});
    await t.expectUntouched(funded, { credits: 5_000n });
  });

  it('answers refusals in the messages style', async () => {
    const key = await t.key();
    t.expectError(
      await countTokens(key.secret, { ...bodyFor('/v1/messages/count_tokens', 'claude-test'), stream: true }),
      400,
      'unsupported_parameter',
    );
    t.expectError(await countTokens(key.secret, '{"model": "claude-test", '), 400, 'invalid_request');
    t.expectError(await countTokens(key.secret, '[1, 2]'), 400, 'invalid_request');
  });
});

describe('GET /v1/key/status', () => {
  interface Status {
    keyId: string;
    name: string;
    state: string;
    expiresAt: string | null;
    scope: string[] | null;
    limits: Record<string, number>;
    remaining: { tokens: string; credits: string };
    reserved: { tokens: string; credits: string };
    allowedAliases: string[];
  }

  async function status(secret: string): Promise<Status> {
    const reply = await t.get('/v1/key/status', secret);
    expect(reply.status, reply.text).toBe(200);
    t.expectNothingLeaked(reply.text);
    return JSON.parse(reply.text) as Status;
  }

  it('reports state, expiry, ceilings, allowed aliases and exact balances as integer strings', async () => {
    const key = await t.key({
      packages: ['pro'],
      credits: 123_456_789_012_345_678n,
      limits: { maxRequestBytes: 50_000, maxOutputTokens: 700, requestsPerMinute: 90, concurrency: 3 },
    });
    const before = await status(key.secret);
    expect(before).toEqual({
      keyId: key.keyId,
      name: 'test',
      state: 'active',
      expiresAt: null,
      scope: null,
      limits: { maxRequestBytes: 50_000, maxOutputTokens: 700, requestsPerMinute: 90, concurrency: 3 },
      remaining: { tokens: '100000', credits: '123456789012345678' },
      reserved: { tokens: '0', credits: '0' },
      caps: [],
      allowedAliases: ['claude-all', 'claude-test', 'gpt-all', 'gpt-test', 'tokens-test'],
    });

    // While a call is in flight its reservation shows as reserved.
    const arrived = new Promise<void>((resolve) => t.stack.mock.server.once('request', () => resolve()));
    const tag = uniqueTag('inflight');
    const call = t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'tokens-test', `tag=${tag},delay=700,input_tokens=30,output_tokens=12`),
    );
    await arrived;
    const during = await status(key.secret);
    const reservedTokens = BigInt(during.reserved.tokens);
    expect(reservedTokens).toBeGreaterThan(64n); // the estimate holds the max output (64) and the input
    expect(BigInt(during.remaining.tokens)).toBe(100_000n - reservedTokens);
    expect((await call).status).toBe(200);

    await t.stack.settled();
    const after = await status(key.secret);
    expect(after.remaining).toEqual({ tokens: String(100_000 - 42), credits: '123456789012345678' });
    expect(after.reserved).toEqual({ tokens: '0', credits: '0' });
    // Reading the status reserved and spent nothing.
    expect((await t.stack.reservations(key.accountId)).map((row) => row.status)).toEqual(['settled']);
    expect(await t.stack.balances(key.accountId)).toMatchObject({
      tokens: 100_000n - 42n,
      reservedTokens: 0n,
    });
  });

  it('shows a scoped key its scope, only the published aliases in it, and its expiry', async () => {
    const owner = await t.key();
    const expiresAt = new Date(Date.now() + 86_400_000);
    const scoped = await createKey(t.stack.controlPlane.deps, owner.accountId, {
      name: 'ci',
      scope: ['gpt-test', 'hidden-test'],
      expiresAt: expiresAt.toISOString(),
    });
    t.remember(scoped.secret);
    const reply = await status(scoped.secret);
    expect(reply).toMatchObject({
      keyId: scoped.key.id,
      name: 'ci',
      state: 'active',
      scope: ['gpt-test', 'hidden-test'],
      allowedAliases: ['gpt-test'],
      remaining: { tokens: '0', credits: '0' },
    });
    expect(Date.parse(reply.expiresAt!)).toBe(expiresAt.getTime());
    await t.expectUntouched(owner, {});
  });
});
