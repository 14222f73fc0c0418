import { apiKeyDigest, type ReserveResult } from '@tollgate/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFundedKey,
  ENGINES,
  endItem,
  expectLedgerConsistent,
  type FundedKey,
  internalApi,
  reserveItem,
  seedCatalog,
  settleItem,
} from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { createKey } from '../api-keys/api-keys.service.ts';
import { resolveHold } from '../billing/holds.service.ts';
import type { CapParty } from './spend-caps.counting.ts';
import { type CapChange, readCapStatus, setCapTimeZone, setSpendCap } from './spend-caps.service.ts';
import { capWindow } from './windows.ts';

// Must hold (issue 28): a cap admits exactly the calls it covers, however many arrive at once;
// the next is refused with 429 rate_limit_exceeded and a Retry-After within a second of the moment
// enough of the window frees; once the window moves, calls pass again.
const HOUR = 3_600_000;
// 'priced' costs 2 per input and 5 per output token: a call of 10 + 20 counts 120 credits, 30 tokens.
const CALL_CREDITS = 120n;
const CALL_TOKENS = 30n;
const CALLS = 7n;

describe.each(ENGINES.filter(([name]) => process.env.CAPS_ENGINES?.includes(name) ?? true))(
  'spend caps (%s)',
  (label, hotTier) => {
    let context: TestContext;
    let api: ReturnType<typeof internalApi>;

    beforeAll(async () => {
      context = await createTestContext(`caps-${label.replace(' ', '-')}`, {}, { hotTier });
      await seedCatalog(context);
      api = internalApi(context);
    }, 60_000);
    afterAll(async () => {
      await expectLedgerConsistent(context);
      await context.close();
    });

    const cap = (party: CapParty, target: { accountId: string; keyId: string | null }, change: CapChange) =>
      setSpendCap(
        context.deps,
        { accountId: target.accountId, ip: null, userAgent: null },
        party,
        target,
        change,
      );
    const call = (key: FundedKey) => reserveItem(key, 'priced', 10n, 20n);

    async function burst(keys: FundedKey[], count: number): Promise<ReserveResult[]> {
      return Promise.all(
        Array.from({ length: count }, async (_, index) => {
          const response = await api.reserve([call(keys[index % keys.length] as FundedKey)]);
          expect(response.status).toBe(200);
          return response.body.results[0] as ReserveResult;
        }),
      );
    }

    const admitted = (results: ReserveResult[]) => results.filter((result) => result.ok);
    function expectCapRefusals(results: ReserveResult[]) {
      for (const result of results.filter((result) => !result.ok)) {
        expect(result).toMatchObject({ ok: false, code: 'rate_limit_exceeded' });
        expect((result as { message: string }).message).toMatch(/^Spend cap reached: /);
      }
    }

    it('admits exactly the calls a 5-hour key cap covers out of 200 at once, then frees it 5 hours later', async () => {
      const key = await createFundedKey(context, { credits: 1_000_000n });
      await cap(
        'customer',
        { accountId: key.accountId, keyId: key.keyId },
        {
          unit: 'credits',
          period: '5h',
          limit: CALL_CREDITS * CALLS,
        },
      );
      const started = context.clock.now().getTime();
      const results = await burst([key], 200);
      expect(admitted(results)).toHaveLength(Number(CALLS));
      expectCapRefusals(results);

      const next = (await api.reserve([call(key)])).body.results[0] as Extract<ReserveResult, { ok: false }>;
      expect(next).toMatchObject({ ok: false, code: 'rate_limit_exceeded' });
      expect(next.message).toContain('This key may use at most 840 credits per 5 hours (rolling)');
      const status = await readCapStatus(context.deps, key.accountId, key.keyId);
      expect(status.caps).toMatchObject([{ unit: 'credits', period: '5h', used: 840n, remaining: 0n }]);
      // The true free time: 5 hours after the first call was counted (at or after `started`).
      const freeAt = status.caps[0]?.resetsAt?.getTime() as number;
      expect(freeAt).toBeGreaterThanOrEqual(started + 5 * HOUR);
      const trueFree = (freeAt - context.clock.now().getTime()) / 1000;
      expect(Math.abs((next.retryAfterSeconds as number) - trueFree)).toBeLessThanOrEqual(1);

      // The settlement corrects the count: a call that used nothing frees its estimate at once.
      const first = admitted(results)[0] as Extract<ReserveResult, { ok: true }>;
      const settled = await api.finish([settleItem(key, first.reservationId, 'priced', 0n, 0n)]);
      expect(settled.status).toBe(200);
      expect((await api.reserve([call(key)])).body.results[0]?.ok).toBe(true);
      expect((await api.reserve([call(key)])).body.results[0]?.ok).toBe(false);

      context.clock.advance(5 * HOUR + 2000);
      const later = await burst([key], 20);
      expect(admitted(later)).toHaveLength(Number(CALLS));
    }, 60_000);

    it('stops counting a call the rolling window passed while it ran: its settlement changes nothing there', async () => {
      const key = await createFundedKey(context, { credits: 1_000_000n });
      await cap(
        'customer',
        { accountId: key.accountId, keyId: key.keyId },
        { unit: 'credits', period: '5h', limit: CALL_CREDITS * CALLS },
      );
      const early = (await api.reserve([call(key)])).body.results[0] as Extract<ReserveResult, { ok: true }>;
      expect(early.ok).toBe(true);
      context.clock.advance(5 * HOUR + 2000);
      const results = await burst([key], 20);
      expect(admitted(results)).toHaveLength(Number(CALLS));
      // Settled far above its estimate, after its window passed: the window does not count it.
      await api.finish([settleItem(key, early.reservationId, 'priced', 1000n, 1000n)]);
      await api.finish(
        admitted(results).map((result) => settleItem(key, result.reservationId, 'priced', 0n, 0n)),
      );
      // Every call in the window used nothing: the whole cap is free again, and no more.
      expect(admitted(await burst([key], 20))).toHaveLength(Number(CALLS));
    }, 60_000);

    it('bounds a calendar day in the account timezone and opens again at its midnight', async () => {
      const key = await createFundedKey(context, { credits: 1_000_000n });
      await setCapTimeZone(context.deps, key.accountId, 'America/New_York');
      await cap(
        'admin',
        { accountId: key.accountId, keyId: null },
        {
          unit: 'tokens',
          period: 'day',
          limit: CALL_TOKENS * CALLS,
        },
      );
      // 30 seconds before midnight in New York.
      const day = capWindow('day', 'America/New_York', context.clock.now().getTime());
      context.clock.advance((day.end as number) - 30_000 - context.clock.now().getTime());
      const results = await burst([key], 50);
      expect(admitted(results)).toHaveLength(Number(CALLS));
      const next = (await api.reserve([call(key)])).body.results[0] as Extract<ReserveResult, { ok: false }>;
      expect(next.code).toBe('rate_limit_exceeded');
      expect(next.message).toContain('The account may use at most 210 tokens per day (America/New_York)');
      expect(next.message).toContain('set by the operator');
      const toMidnight = ((day.end as number) - context.clock.now().getTime()) / 1000;
      expect(Math.abs((next.retryAfterSeconds as number) - toMidnight)).toBeLessThanOrEqual(1);

      context.clock.advance(31_000);
      expect(admitted(await burst([key], 50))).toHaveLength(Number(CALLS));
    }, 60_000);

    it("counts a held call's estimate until an admin resolves it, then its usage", async () => {
      const key = await createFundedKey(context, { credits: 1_000_000n });
      await cap(
        'customer',
        { accountId: key.accountId, keyId: key.keyId },
        {
          unit: 'tokens',
          period: '5h',
          limit: 1000n,
        },
      );
      const reserved = (await api.reserve([call(key)])).body.results[0] as Extract<
        ReserveResult,
        { ok: true }
      >;
      expect(reserved.ok).toBe(true);
      await api.finish([endItem(key, reserved.reservationId, 'priced', 'hold', 'upstream_invalid_response')]);
      const used = async () => (await readCapStatus(context.deps, key.accountId, key.keyId)).caps[0]?.used;
      expect(await used()).toBe(CALL_TOKENS);
      await resolveHold(context.deps, reserved.reservationId, {
        action: 'settle',
        inputTokens: 4n,
        outputTokens: 3n,
      });
      expect(await used()).toBe(7n);
    }, 60_000);

    it('shares an account cap between two keys', async () => {
      const first = await createFundedKey(context, { credits: 1_000_000n });
      const { key, secret } = await createKey(context.deps, first.accountId, { name: 'second', scope: null });
      const second = { ...first, keyId: key.id, secret, digest: apiKeyDigest(secret) };
      await cap(
        'reseller',
        { accountId: first.accountId, keyId: null },
        {
          unit: 'credits',
          period: '5h',
          limit: CALL_CREDITS * CALLS,
        },
      );
      const results = await burst([first, second], 100);
      expect(admitted(results)).toHaveLength(Number(CALLS));
      expectCapRefusals(results);
      const byKey = new Set(admitted(results).map((result) => (result as { keyId: string }).keyId));
      expect(byKey.size).toBe(2);
      const [one, two] = await Promise.all(
        [first, second].map((k) => readCapStatus(context.deps, k.accountId, k.keyId)),
      );
      expect(one?.caps[0]).toMatchObject({ keyId: null, used: 840n, remaining: 0n });
      expect(two?.caps[0]).toMatchObject({ keyId: null, used: 840n, remaining: 0n });
    }, 60_000);
  },
);
