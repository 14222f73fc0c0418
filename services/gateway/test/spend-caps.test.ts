import { setSpendCap } from '@tollgate/control-plane/test-kit';
import { describe, expect, it } from 'vitest';
import { bodyFor, useStack } from './support.ts';

// A spend cap refuses before any upstream call, as the caller's protocol renders a 429, with the
// cap named and Retry-After to when it frees; the key status lists it.
const t = useStack('gw-spend-caps');
const CREDITS = 10_000_000n;

describe('spend caps at the gateway', () => {
  it('refuses a call over a cap with 429 rate_limit_exceeded, the cap named and Retry-After to its end', async () => {
    const key = await t.key({ credits: CREDITS });
    const deps = t.stack.controlPlane.deps;
    await setSpendCap(deps, { accountId: key.accountId, ip: null, userAgent: null }, 'customer', key, {
      unit: 'tokens',
      period: 'day',
      limit: 1n,
    });
    const calls = t.upstreamCalls();
    for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/responses'] as const) {
      const model = path === '/v1/messages' ? 'claude-test' : 'gpt-test';
      const reply = await t.post(path, key.secret, bodyFor(path, model));
      const message = t.expectError(reply, 429, 'rate_limit_exceeded');
      expect(message).toContain('Spend cap reached: This key may use at most 1 tokens per day (UTC)');
      const midnight = new Date();
      midnight.setUTCHours(24, 0, 0, 0);
      const toMidnight = (midnight.getTime() - Date.now()) / 1000;
      expect(Math.abs(Number(reply.headers.get('retry-after')) - toMidnight)).toBeLessThanOrEqual(2);
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });

    const status = await t.get('/v1/key/status', key.secret);
    expect(status.status).toBe(200);
    expect(JSON.parse(status.text).caps).toMatchObject([
      {
        keyId: key.keyId,
        setBy: 'customer',
        unit: 'tokens',
        period: 'day',
        limit: '1',
        used: '0',
        remaining: '1',
      },
    ]);
  });
});
