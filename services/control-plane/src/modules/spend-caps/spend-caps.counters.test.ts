import type { ReserveResult } from '@tollgate/schemas';
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
import { resolveHold } from '../billing/holds.service.ts';
import { reconcileOnce } from '../billing/reconciler.ts';
import type { CapParty } from './spend-caps.counting.ts';
import { type CapChange, readCapStatus, setCapTimeZone, setSpendCap } from './spend-caps.service.ts';
import { capWindow } from './windows.ts';

// Calendar caps are judged from one running sum per subject and window (docs/decisions/spend-caps.md):
// what a capped reservation reads does not grow with the calls counted in a day, week or month,
// and the sums move exactly as the calls' counts do (estimate, then usage, nothing once released).
// 'priced' costs 2 per input and 5 per output token: a call of 10 + 20 counts 120 credits, 30 tokens.
const CALL_CREDITS = 120n;
const CALL_TOKENS = 30n;
const MANY = 2000;

describe.each(ENGINES.filter(([name]) => process.env.CAPS_ENGINES?.includes(name) ?? true))(
  'spend cap sums (%s)',
  (label, hotTier) => {
    let context: TestContext;
    let api: ReturnType<typeof internalApi>;

    beforeAll(async () => {
      context = await createTestContext(`capsums-${label.replace(' ', '-')}`, {}, { hotTier });
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
    // Every calendar sum the engine holds for the account, whatever the windows.
    const sums = (key: FundedKey) =>
      context.deps.billing.capCounts(key.accountId, { callsSince: null, countersSince: 0 });
    const sumOf = async (key: FundedKey, keyId: string | null, period: 'day' | 'week' | 'month') => {
      const found = (await sums(key)).counters.filter(
        (each) => each.keyId === keyId && each.period === period,
      );
      expect(found).toHaveLength(1);
      return { credits: found[0]?.credits, tokens: found[0]?.tokens };
    };

    it(`keeps one sum per window for ${MANY} calls, without the calls, and judges from it exactly`, async () => {
      const key = await createFundedKey(context, { credits: 100_000_000n });
      // An hour into a UTC day, so that every call falls in one day.
      const day = capWindow('day', 'UTC', context.clock.now().getTime());
      context.clock.advance((day.end as number) + 3_600_000 - context.clock.now().getTime());
      const account = { accountId: key.accountId, keyId: null };
      await cap('admin', account, { unit: 'tokens', period: 'day', limit: CALL_TOKENS * BigInt(MANY + 2) });
      await cap(
        'customer',
        { accountId: key.accountId, keyId: key.keyId },
        {
          unit: 'credits',
          period: 'month',
          limit: 10n ** 12n,
        },
      );
      for (let done = 0; done < MANY; done += 200) {
        const items = Array.from({ length: 200 }, () => reserveItem(key, 'priced', 10n, 20n));
        const reserved = await api.reserve(items);
        expect(reserved.body.results.every((result: ReserveResult) => result.ok)).toBe(true);
        const settled = await api.finish(
          items.map((item) => settleItem(key, item.reservationId, 'priced', 10n, 20n)),
        );
        expect(settled.status).toBe(200);
      }
      // Past the rolling window the reconciler drops the calls themselves: the sums keep the count.
      context.clock.advance(6 * 3_600_000);
      await reconcileOnce(context.deps);
      const rows = await context.deps.db
        .selectFrom('spend_cap_usage')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('account_id', '=', key.accountId)
        .executeTakeFirstOrThrow();
      expect(Number(rows.n)).toBe(0);
      // One sum per subject (the account, the key) and calendar window: 6, not 2,000 calls.
      const counts = await sums(key);
      expect(counts.calls).toEqual([]);
      expect(counts.counters).toHaveLength(6);
      expect(await sumOf(key, null, 'day')).toEqual({
        credits: CALL_CREDITS * BigInt(MANY),
        tokens: CALL_TOKENS * BigInt(MANY),
      });
      expect(await sumOf(key, key.keyId, 'month')).toEqual({
        credits: CALL_CREDITS * BigInt(MANY),
        tokens: CALL_TOKENS * BigInt(MANY),
      });

      const status = await readCapStatus(context.deps, key.accountId, key.keyId);
      expect(status.caps.find((each) => each.period === 'day')).toMatchObject({
        used: CALL_TOKENS * BigInt(MANY),
        remaining: CALL_TOKENS * 2n,
      });
      const three = await api.reserve([1, 2, 3].map(() => reserveItem(key, 'priced', 10n, 20n)));
      const results = three.body.results as ReserveResult[];
      expect(results.map((result) => result.ok)).toEqual([true, true, false]);
      const refused = results[2] as Extract<ReserveResult, { ok: false }>;
      expect(refused.code).toBe('rate_limit_exceeded');
      expect(refused.message).toContain('per day (UTC)');
      const toMidnight = ((day.end as number) + 86_400_000 - context.clock.now().getTime()) / 1000;
      expect(Math.abs((refused.retryAfterSeconds as number) - toMidnight)).toBeLessThanOrEqual(1);
    }, 240_000);

    it('keeps counting a window after the account changes timezone, in the new windows it overlaps', async () => {
      const key = await createFundedKey(context, { credits: 1_000_000n });
      // An hour into a UTC day: 10:00 in Tokyo, whose day began 9 hours before the UTC one.
      const day = capWindow('day', 'UTC', context.clock.now().getTime());
      context.clock.advance((day.end as number) + 3_600_000 - context.clock.now().getTime());
      await cap(
        'customer',
        { accountId: key.accountId, keyId: null },
        {
          unit: 'tokens',
          period: 'day',
          limit: CALL_TOKENS * 3n,
        },
      );
      const items = [1, 2, 3].map(() => reserveItem(key, 'priced', 10n, 20n));
      expect((await api.reserve(items)).body.results.every((result: ReserveResult) => result.ok)).toBe(true);
      await api.finish(items.map((item) => settleItem(key, item.reservationId, 'priced', 10n, 20n)));

      await setCapTimeZone(context.deps, key.accountId, 'Asia/Tokyo');
      const status = await readCapStatus(context.deps, key.accountId, key.keyId);
      expect(status.caps).toMatchObject([
        { period: 'day', timeZone: 'Asia/Tokyo', used: CALL_TOKENS * 3n, remaining: 0n },
      ]);
      const refused = (await api.reserve([reserveItem(key, 'priced', 10n, 20n)])).body.results[0];
      expect(refused).toMatchObject({ ok: false, code: 'rate_limit_exceeded' });
      expect((refused as { message: string }).message).toContain('per day (Asia/Tokyo)');
    }, 60_000);

    it('corrects the sums at settlement and release; a held call keeps its estimate', async () => {
      const key = await createFundedKey(context, { credits: 1_000_000n });
      await cap(
        'customer',
        { accountId: key.accountId, keyId: key.keyId },
        {
          unit: 'tokens',
          period: 'week',
          limit: 1000n,
        },
      );
      const items = [1, 2, 3].map(() => reserveItem(key, 'priced', 10n, 20n));
      const reserved = await api.reserve(items);
      expect(reserved.body.results.every((result: ReserveResult) => result.ok)).toBe(true);
      const estimate = { credits: 3n * CALL_CREDITS, tokens: 3n * CALL_TOKENS };
      expect(await sumOf(key, key.keyId, 'week')).toEqual(estimate);
      expect(await sumOf(key, null, 'day')).toEqual(estimate);

      const [first, second, third] = items.map((item) => item.reservationId) as [string, string, string];
      // Settled at 4 + 3 tokens: 4 * 2 + 3 * 5 = 23 credits instead of its estimate.
      await api.finish([settleItem(key, first, 'priced', 4n, 3n)]);
      expect(await sumOf(key, key.keyId, 'week')).toEqual({
        credits: 2n * CALL_CREDITS + 23n,
        tokens: 2n * CALL_TOKENS + 7n,
      });
      await api.finish([endItem(key, second, 'priced', 'release', 'upstream_unavailable')]);
      await api.finish([endItem(key, third, 'priced', 'hold', 'upstream_invalid_response')]);
      const held = { credits: CALL_CREDITS + 23n, tokens: CALL_TOKENS + 7n };
      expect(await sumOf(key, key.keyId, 'week')).toEqual(held);
      expect(await sumOf(key, null, 'month')).toEqual(held);
      // A settlement repeated changes nothing more.
      await api.finish([settleItem(key, first, 'priced', 4n, 3n)]);
      expect(await sumOf(key, key.keyId, 'week')).toEqual(held);

      await resolveHold(context.deps, third, { action: 'release' });
      expect(await sumOf(key, key.keyId, 'week')).toEqual({ credits: 23n, tokens: 7n });
      const status = await readCapStatus(context.deps, key.accountId, key.keyId);
      expect(status.caps).toMatchObject([{ period: 'week', used: 7n, remaining: 993n }]);

      // A call the reservation refuses (the balance) counts in no sum.
      const poor = await createFundedKey(context, { credits: 100n });
      await cap(
        'customer',
        { accountId: poor.accountId, keyId: poor.keyId },
        {
          unit: 'tokens',
          period: 'day',
          limit: 1000n,
        },
      );
      const refused = await api.reserve([reserveItem(poor, 'priced', 10n, 20n)]);
      expect(refused.body.results[0]).toMatchObject({ ok: false, code: 'insufficient_credits' });
      expect((await sums(poor)).counters.every((each) => each.credits === 0n && each.tokens === 0n)).toBe(
        true,
      );
    }, 60_000);
  },
);
