import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  balancesOf,
  createFundedKey,
  ENGINES,
  endItem,
  expectLedgerConsistent,
  internalApi,
  reserveItem,
  seedCatalog,
  settleItem,
} from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';

/** Exactness under concurrency, whichever engine answers: Postgres alone, or the hot tier. */
describe.each(ENGINES)('%s', (_engine, hotTier) => {
  let context: TestContext;
  let api: ReturnType<typeof internalApi>;

  beforeAll(async () => {
    // Exactly N of N+k concurrent reservations: the in-flight overrun bound (tested in the rules) is off.
    context = await createTestContext(
      `billing-concurrency-${hotTier ? 'hot' : 'pg'}`,
      { RESERVE_OVERRUN_COVER_PERCENT: '0' },
      { hotTier },
    );
    await seedCatalog(context);
    api = internalApi(context);
  });
  afterEach(() => expectLedgerConsistent(context));
  afterAll(() => context.close());

  /** Reserve then (if granted) settle the full estimate, as one gateway request would. */
  async function reserveAndSettle(
    key: Awaited<ReturnType<typeof createFundedKey>>,
    alias: string,
    input: bigint,
    output: bigint,
  ) {
    const item = reserveItem(key, alias, input, output);
    const reserved = await api.reserve([item]);
    expect(reserved.status).toBe(200);
    const result = reserved.body.results[0]!;
    if (!result.ok) return result.code;
    const settled = await api.finish([settleItem(key, item.reservationId, alias, input, output)]);
    expect(settled.body.results[0]).toMatchObject({ status: 'settled', replay: false });
    return 'ok';
  }

  describe('200 concurrent reserve+settle calls against a balance that covers exactly N', () => {
    it('admits exactly N on token quota; the rest get insufficient_tokens', async () => {
      // Package "exact": 7,300 tokens on tokens-only; each call costs 40 + 60 = 100 -> N = 73.
      const key = await createFundedKey(context, { packages: ['exact'] });
      const outcomes = await Promise.all(
        Array.from({ length: 200 }, () => reserveAndSettle(key, 'tokens-only', 40n, 60n)),
      );
      expect(outcomes.filter((outcome) => outcome === 'ok')).toHaveLength(73);
      expect(outcomes.filter((outcome) => outcome === 'insufficient_tokens')).toHaveLength(127);
      expect(await balancesOf(context, key.accountId)).toEqual({
        tokens: 0n,
        reservedTokens: 0n,
        credits: 0n,
        reservedCredits: 0n,
      });
      const charged = await context.deps.db
        .selectFrom('reservations')
        .select((eb) => eb.fn.sum<bigint>('charged_tokens').as('total'))
        .where('account_id', '=', key.accountId)
        .executeTakeFirstOrThrow();
      expect(BigInt(charged.total)).toBe(7300n);
    });

    it('admits exactly N on credit; the rest get insufficient_credits', async () => {
      // priced: 2 per input token, 5 per output token; 10 in + 20 out = 120 credits; 6,000 -> N = 50.
      const key = await createFundedKey(context, { credits: 6000n });
      const outcomes = await Promise.all(
        Array.from({ length: 200 }, () => reserveAndSettle(key, 'priced', 10n, 20n)),
      );
      expect(outcomes.filter((outcome) => outcome === 'ok')).toHaveLength(50);
      expect(outcomes.filter((outcome) => outcome === 'insufficient_credits')).toHaveLength(150);
      expect(await balancesOf(context, key.accountId)).toMatchObject({ credits: 0n, reservedCredits: 0n });
    });

    it('keeps several accounts exact when their batches interleave', async () => {
      const keys = await Promise.all(
        Array.from({ length: 4 }, () => createFundedKey(context, { packages: ['exact'] })),
      );
      // Batches of 5 items mixing all four accounts, 40 batches at once: 50 items per account.
      const batches = Array.from({ length: 40 }, (_, index) =>
        Array.from({ length: 5 }, (_unused, slot) => keys[(index + slot) % 4]!),
      );
      const results = await Promise.all(
        batches.map(async (batchKeys) => {
          const items = batchKeys.map((key) => reserveItem(key, 'tokens-only', 100n, 100n));
          const reserved = await api.reserve(items);
          expect(reserved.status).toBe(200);
          const granted = reserved.body.results.flatMap((result, index) =>
            result.ok
              ? [settleItem(batchKeys[index]!, items[index]!.reservationId, 'tokens-only', 100n, 100n)]
              : [],
          );
          if (granted.length > 0) expect((await api.finish(granted)).status).toBe(200);
          return granted.length;
        }),
      );
      // 7,300 / 200 per call = 36 calls per account.
      expect(results.reduce((sum, count) => sum + count, 0)).toBe(4 * 36);
      for (const key of keys) expect((await balancesOf(context, key.accountId)).tokens).toBe(100n);
    });
  });

  describe('settle, release and hold repeated (also concurrently) have one effect', () => {
    it('settles once however often and however concurrently it is sent', async () => {
      const key = await createFundedKey(context, { packages: ['small'] });
      const item = reserveItem(key, 'tokens-only', 100n, 200n);
      expect((await api.reserve([item])).body.results[0]?.ok).toBe(true);
      const settle = settleItem(key, item.reservationId, 'tokens-only', 50n, 70n);
      const answers = [
        ...(await Promise.all(Array.from({ length: 5 }, () => api.finish([settle])))),
        await api.finish([settle, settle, settle, settle, settle]),
      ];
      const results = answers.flatMap((answer) => answer.body.results);
      expect(results.filter((result) => !result.replay)).toHaveLength(1);
      for (const result of results)
        expect(result).toMatchObject({ status: 'settled', charged: { tokens: '120', credits: '0' } });
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 880n, reservedTokens: 0n });
    });

    it('releases once', async () => {
      const key = await createFundedKey(context, { packages: ['small'] });
      const item = reserveItem(key, 'tokens-only', 100n, 200n);
      await api.reserve([item]);
      const release = endItem(key, item.reservationId, 'tokens-only', 'release', 'upstream_unavailable');
      const answers = await Promise.all(Array.from({ length: 5 }, () => api.finish([release])));
      expect(
        answers.flatMap((answer) => answer.body.results).filter((result) => !result.replay),
      ).toHaveLength(1);
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 1000n, reservedTokens: 0n });
      const rows = await context.deps.db
        .selectFrom('ledger_entries')
        .select('kind')
        .where('reservation_id', '=', item.reservationId)
        .execute();
      // In Postgres a reservation moves money out and its release moves it back, once. In the hot
      // tier both happened in Redis, inside the lease: Postgres records the call and moves nothing.
      expect(rows.map((row) => row.kind).sort()).toEqual(hotTier ? [] : ['release', 'reserve']);
      expect(
        await context.deps.db
          .selectFrom('reservations')
          .select('status')
          .where('id', '=', item.reservationId)
          .execute(),
      ).toEqual([{ status: 'released' }]);
    });

    it('holds once, keeps the amount reserved, and a later settle resolves it once', async () => {
      const key = await createFundedKey(context, { packages: ['small'] });
      const item = reserveItem(key, 'tokens-only', 100n, 200n);
      await api.reserve([item]);
      const hold = endItem(key, item.reservationId, 'tokens-only', 'hold', 'billing_settlement_pending');
      const answers = await Promise.all(Array.from({ length: 5 }, () => api.finish([hold])));
      const results = answers.flatMap((answer) => answer.body.results);
      expect(results.filter((result) => !result.replay)).toHaveLength(1);
      expect(results.every((result) => result.status === 'held')).toBe(true);
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 700n, reservedTokens: 300n });

      const settle = settleItem(key, item.reservationId, 'tokens-only', 100n, 150n);
      const settled = await Promise.all(Array.from({ length: 5 }, () => api.finish([settle])));
      expect(
        settled.flatMap((answer) => answer.body.results).filter((result) => !result.replay),
      ).toHaveLength(1);
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 750n, reservedTokens: 0n });
    });

    it('ignores a release or hold that arrives after the settle', async () => {
      const key = await createFundedKey(context, { packages: ['small'] });
      const item = reserveItem(key, 'tokens-only', 10n, 10n);
      await api.reserve([item]);
      await api.finish([settleItem(key, item.reservationId, 'tokens-only', 5n, 5n)]);
      const late = await api.finish([
        endItem(key, item.reservationId, 'tokens-only', 'release', 'client_disconnected'),
        endItem(key, item.reservationId, 'tokens-only', 'hold', 'billing_settlement_pending'),
      ]);
      expect(late.body.results.map((result) => [result.status, result.replay])).toEqual([
        ['settled', true],
        ['settled', true],
      ]);
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 990n, reservedTokens: 0n });
    });
  });
});
