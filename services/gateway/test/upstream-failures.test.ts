import { describe, expect, it } from 'vitest';
import { bodyFor, type FundedKey, uniqueTag, useStack } from './support.ts';

const HEADERS_TIMEOUT_MS = 400;
const t = useStack('gw-upstream-failures', {
  gatewayEnv: { UPSTREAM_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS) },
});
const CREDITS = 10_000_000n;

const SURFACES: Array<[string, string]> = [
  ['/v1/messages', 'claude-test'],
  ['/v1/chat/completions', 'gpt-test'],
  ['/v1/responses', 'gpt-test'],
];

/** One metered call that reaches the mock exactly once with these directives. */
async function callOnce(key: FundedKey, path: string, alias: string, directives: string) {
  const tag = uniqueTag('up');
  const reply = await t.post(path, key.secret, bodyFor(path, alias, `tag=${tag},${directives}`));
  expect(t.tagged(tag)).toBe(1);
  return reply;
}

/** The call's one reservation was released: everything back, the outcome recorded. */
async function expectReleased(key: FundedKey, outcome: string, httpStatus: number): Promise<void> {
  await t.stack.settled();
  expect(await t.stack.balances(key.accountId)).toEqual({
    tokens: 0n,
    reservedTokens: 0n,
    credits: CREDITS,
    reservedCredits: 0n,
  });
  const reservations = await t.stack.reservations(key.accountId);
  expect(reservations.map((row) => [row.status, row.outcome, row.http_status, row.charged_credits])).toEqual([
    ['released', outcome, httpStatus, 0n],
  ]);
}

describe('the provider refuses or fails', () => {
  it("passes the provider's 4xx through as upstream_rejected and releases the reservation", async () => {
    for (const [path, alias] of SURFACES) {
      for (const status of [400, 404, 409, 413, 422]) {
        const key = await t.key({ credits: CREDITS });
        const reply = await callOnce(key, path, alias, `status=${status}`);
        t.expectError(reply, status, 'upstream_rejected');
        await expectReleased(key, 'upstream_rejected', status);
      }
    }
  });

  it('answers upstream_unavailable for 401, 403, 408, 429, 5xx and 529, and releases', async () => {
    for (const [path, alias] of SURFACES) {
      for (const status of [401, 403, 408, 429, 500, 502, 503, 504, 529]) {
        const key = await t.key({ credits: CREDITS });
        const reply = await callOnce(key, path, alias, `status=${status},retry_after=30`);
        t.expectError(reply, 503, 'upstream_unavailable');
        // The provider's own Retry-After and headers never reach the client.
        expect(reply.headers.get('retry-after')).toBeNull();
        await expectReleased(key, 'upstream_unavailable', 503);
      }
    }
  });

  it('logs why the provider failed, with the provider id, at warn; the body says only the code', async () => {
    for (const [status, reason] of [
      [401, 'credential_refused'],
      [429, 'rate_limited'],
      [500, 'provider_error'],
    ] as const) {
      const key = await t.key({ credits: CREDITS });
      const reply = await callOnce(key, '/v1/chat/completions', 'gpt-test', `status=${status}`);
      t.expectError(reply, 503, 'upstream_unavailable');
      expect(reply.text).not.toContain(reason);
      const line = await t.waitForLog(
        (text) => text.includes('upstream call failed') && text.includes(key.keyId),
      );
      expect(JSON.parse(line)).toMatchObject({
        level: 40,
        providerId: 'mock-openai',
        reason,
        upstreamStatus: status,
      });
    }
  });

  it('answers upstream_unavailable when the provider is too slow to answer, and releases', async () => {
    for (const [path, alias] of SURFACES) {
      const key = await t.key({ credits: CREDITS });
      const started = performance.now();
      const reply = await callOnce(key, path, alias, `delay=${HEADERS_TIMEOUT_MS * 5}`);
      t.expectError(reply, 503, 'upstream_unavailable');
      expect(performance.now() - started).toBeLessThan(HEADERS_TIMEOUT_MS * 4);
      await expectReleased(key, 'upstream_unavailable', 503);
    }
  });

  it('answers upstream_invalid_response for a body that is not JSON, and releases', async () => {
    for (const [path, alias] of SURFACES) {
      const key = await t.key({ credits: CREDITS });
      const reply = await callOnce(key, path, alias, 'invalid_json');
      t.expectError(reply, 502, 'upstream_invalid_response');
      await expectReleased(key, 'upstream_invalid_response', 502);
    }
  });

  it('answers billing_settlement_pending when the answer has no usage, and holds the reservation', async () => {
    for (const [path, alias] of SURFACES) {
      const key = await t.key({ credits: CREDITS });
      const reply = await callOnce(key, path, alias, 'no_usage');
      t.expectError(reply, 502, 'billing_settlement_pending');
      await t.stack.settled();
      const [reservation, ...others] = await t.stack.reservations(key.accountId);
      expect(others).toEqual([]);
      expect(reservation).toMatchObject({
        status: 'held',
        outcome: 'billing_settlement_pending',
        charged_credits: 0n,
      });
      expect(reservation!.reserved_credits).toBeGreaterThan(0n);
      // Held, not billed: the reserved amount stays aside, nothing is charged as used.
      expect(await t.stack.balances(key.accountId)).toEqual({
        tokens: 0n,
        reservedTokens: 0n,
        credits: CREDITS - reservation!.reserved_credits,
        reservedCredits: reservation!.reserved_credits,
      });
    }
  });

  it("never repeats a provider's refusal text: the message is built from what the gateway knows", async () => {
    // What the sanitizer of provider text let through: model-id variants, organisation and project
    // ids, deployment names, IPv6 addresses, internal host names.
    const leaks = (upstream: string) => [
      `${upstream}-ft-acme-0613`,
      'org-Zx81pQ',
      'proj_4f9a2c',
      'acme-gpt4o-prod-eastus2',
      '2001:db8:85a3::8a2e:370:7334',
      'llm-proxy.internal.corp:8443',
      'sk-ant-api03-abcdefghijkl',
      'req_011CabcDEF',
    ];
    for (const [path, alias] of SURFACES) {
      const key = await t.key({ credits: CREDITS });
      const upstream = path === '/v1/messages' ? 'upstream-claude-x1' : 'upstream-gpt-y2';
      // The mock refuses an unknown directive with a 400 that repeats it.
      const reply = await t.post(path, key.secret, bodyFor(path, alias, leaks(upstream).join(' ')));
      const message = t.expectError(reply, 400, 'upstream_rejected');
      expect(message).toBe(
        `The model provider refused the request for ${alias} (HTTP 400). Nothing was charged.`,
      );
      for (const leak of leaks(upstream)) expect(message).not.toContain(leak);
      await expectReleased(key, 'upstream_rejected', 400);
    }
  });
});

describe('the client leaves', () => {
  it('charges what the provider reports when the client leaves a non-streamed call before its answer', async () => {
    for (const [path, alias] of SURFACES) {
      const key = await t.key({ credits: CREDITS });
      const tag = uniqueTag('gone');
      // The mock has read the whole request (and recorded it) and now holds it for its delay: the
      // provider is producing the answer it will bill.
      const arrived = new Promise<void>((resolve) =>
        t.stack.mock.server.once('request', (request) => request.once('end', () => resolve())),
      );
      const controller = new AbortController();
      const call = fetch(`${t.stack.gatewayUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(
          bodyFor(path, alias, `tag=${tag},delay=${HEADERS_TIMEOUT_MS / 2},input_tokens=9,output_tokens=4`),
        ),
        signal: controller.signal,
      });
      await arrived;
      controller.abort();
      await expect(call).rejects.toThrow();
      expect(t.tagged(tag)).toBe(1);
      // The gateway logs the request once the provider's answer was read and its usage decided.
      const line = await t.waitForLog((text) => text.includes(key.keyId) && text.includes('"status":499'));
      expect(line).toContain('client_disconnected');
      await t.stack.settled();
      const [reservation, ...others] = await t.stack.reservations(key.accountId);
      expect(others).toEqual([]);
      expect(reservation).toMatchObject({
        status: 'settled',
        outcome: 'client_disconnected',
        http_status: 499,
        input_tokens: 9n,
        output_tokens: 4n,
      });
      expect(reservation!.charged_credits).toBeGreaterThan(0n);
    }
  });
});

describe('balances', () => {
  it('refuses with insufficient_credits (402) before any upstream call', async () => {
    const poor = await t.key({ credits: 100n });
    const none = await t.key();
    const calls = t.upstreamCalls();
    for (const [path, alias] of SURFACES) {
      for (const key of [poor, none]) {
        t.expectError(await t.post(path, key.secret, bodyFor(path, alias)), 402, 'insufficient_credits');
      }
    }
    // An alias without a price cannot be paid with credit at all: only a package can, so the
    // account lacks tokens, not credit.
    const rich = await t.key({ credits: CREDITS });
    t.expectError(
      await t.post('/v1/chat/completions', rich.secret, bodyFor('/v1/chat/completions', 'tokens-test')),
      402,
      'insufficient_tokens',
    );
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(poor, { credits: 100n });
    await t.expectUntouched(none, {});
    await t.expectUntouched(rich, { credits: CREDITS });
  });

  it('refuses with insufficient_tokens (402) once the package is spent, before any upstream call', async () => {
    const key = await t.key({ packages: ['pro'] });
    const spend = await callOnce(
      key,
      '/v1/chat/completions',
      'tokens-test',
      'input_tokens=99990,output_tokens=10',
    );
    expect(spend.status, spend.text).toBe(200);
    await t.stack.settled();
    expect(await t.stack.balances(key.accountId)).toMatchObject({ tokens: 0n, reservedTokens: 0n });

    const calls = t.upstreamCalls();
    for (const [path, alias] of [...SURFACES, ['/v1/chat/completions', 'tokens-test'] as [string, string]]) {
      t.expectError(await t.post(path, key.secret, bodyFor(path, alias)), 402, 'insufficient_tokens');
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.stack.settled();
    expect(await t.stack.balances(key.accountId)).toEqual({
      tokens: 0n,
      reservedTokens: 0n,
      credits: 0n,
      reservedCredits: 0n,
    });
    expect((await t.stack.reservations(key.accountId)).map((row) => row.status)).toEqual(['settled']);
  });
});
