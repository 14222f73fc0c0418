import { randomUUID } from 'node:crypto';
import { chargeWithinLegs } from '@tollgate/schemas';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  balancesOf,
  createFundedKey,
  ENGINES,
  endItem,
  expectLedgerConsistent,
  expireEntitlement,
  grantEntitlement,
  internalApi,
  reserveItem,
  seedCatalog,
  setPackageRate,
  setPrice,
  settleItem,
  sourcesOf,
  spentOf,
} from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { changeKeyStatus } from '../api-keys/api-keys.service.ts';
import { changeCredit } from './billing.service.ts';
import { changeBalances } from './engines.ts';
import { listHeld, resolveHold } from './holds.service.ts';
import { clawBackOrderGrant } from './order-grants.ts';
import { reconcileOnce } from './reconciler.ts';

/**
 * The same rules, whichever engine answers: Postgres alone, or the hot tier (Redis + Postgres).
 * Rule numbers (R4 ...) are those of docs/billing/rules.md.
 */
describe.each(ENGINES)('%s', (_engine, hotTier) => {
  let context: TestContext;
  let api: ReturnType<typeof internalApi>;

  beforeAll(async () => {
    context = await createTestContext(`billing-rules-${hotTier ? 'hot' : 'pg'}`, {}, { hotTier });
    await seedCatalog(context);
    api = internalApi(context);
  });
  afterEach(() => expectLedgerConsistent(context));
  afterAll(() => context.close());

  async function reserveOne(item: ReturnType<typeof reserveItem>) {
    const response = await api.reserve([item]);
    expect(response.status).toBe(200);
    return response.body.results[0]!;
  }

  describe('reserve', () => {
    it('draws from entitlements first (soonest expiry first), then credit at the alias price', async () => {
      const key = await createFundedKey(context, { packages: ['small'], credits: 10_000n });
      // 1,000 tokens of quota; estimate 600 in + 900 out = 1,500: 1,000 from the package (600 in, 400 out),
      // 500 output tokens from credit at 5 each = 2,500 credits.
      const result = await reserveOne(reserveItem(key, 'priced', 600n, 900n));
      expect(result).toMatchObject({ ok: true, reserved: { tokens: '1000', credits: '2500' } });
      expect(result.ok && result.upstreamModel).toBe('secret-upstream-model-a');
      expect(await balancesOf(context, key.accountId)).toEqual({
        tokens: 0n,
        reservedTokens: 1000n,
        credits: 7500n,
        reservedCredits: 2500n,
      });
    });

    it('draws the entitlement that expires soonest first, whatever the grant order (R4)', async () => {
      const key = await createFundedKey(context);
      const DAY = 86_400_000;
      // Granted latest-expiring first, so grant order and expiry order disagree.
      const never = await grantEntitlement(context, key.accountId, { tokens: 100n });
      const late = await grantEntitlement(context, key.accountId, { tokens: 100n, expiresInMs: 20 * DAY });
      const soon = await grantEntitlement(context, key.accountId, { tokens: 100n, expiresInMs: 10 * DAY });
      const item = reserveItem(key, 'tokens-only', 100n, 50n);
      expect(await reserveOne(item)).toMatchObject({ ok: true, reserved: { tokens: '150' } });
      expect(await sourcesOf(context, key.accountId)).toEqual({
        [soon]: { remaining: 0n, reserved: 100n },
        [late]: { remaining: 50n, reserved: 50n },
        [never]: { remaining: 100n, reserved: 0n },
        credit: { remaining: 0n, reserved: 0n },
      });
      await api.finish([settleItem(key, item.reservationId, 'tokens-only', 60n, 60n)]);
      expect(await spentOf(context, key.accountId)).toEqual({ [soon]: 100n, [late]: 20n });
      expect(await sourcesOf(context, key.accountId)).toEqual({
        [soon]: { remaining: 0n, reserved: 0n },
        [late]: { remaining: 80n, reserved: 0n },
        [never]: { remaining: 100n, reserved: 0n },
        credit: { remaining: 0n, reserved: 0n },
      });
    });

    it('stops drawing an entitlement the moment it expires, by the engine clock (R16)', async () => {
      const key = await createFundedKey(context, { credits: 10_000n });
      // An hour from now by the clock, which moves each engine's clock (Postgres tollgate_now(),
      // Redis TIME) with it.
      await grantEntitlement(context, key.accountId, { tokens: 1000n, expiresInMs: 3_600_000 });
      expect(await reserveOne(reserveItem(key, 'priced', 10n, 10n))).toMatchObject({
        reserved: { tokens: '20', credits: '0' },
      });
      context.clock.advance(3_600_000 - 10_000);
      expect(await reserveOne(reserveItem(key, 'priced', 10n, 10n))).toMatchObject({
        reserved: { tokens: '20', credits: '0' },
      });
      context.clock.advance(10_000);
      expect(await reserveOne(reserveItem(key, 'priced', 10n, 10n))).toMatchObject({
        reserved: { tokens: '0', credits: '70' },
      });
    });

    it('refuses with the documented codes and reserves nothing', async () => {
      const funded = await createFundedKey(context, { packages: ['exact'], scope: ['tokens-only'] });
      const cases: Array<[ReturnType<typeof reserveItem>, string]> = [
        [{ ...reserveItem(funded, 'tokens-only', 1n, 1n), keyDigest: 'f'.repeat(64) }, 'invalid_api_key'],
        [reserveItem(funded, 'no-such-alias', 1n, 1n), 'invalid_model'],
        [reserveItem(funded, 'hidden', 1n, 1n), 'model_not_allowed'],
        [reserveItem(funded, 'priced', 1n, 1n), 'model_not_allowed'], // outside the key's scope
        [{ ...reserveItem(funded, 'tokens-only', 1n, 1n), surface: 'responses' }, 'model_unavailable'],
        [reserveItem(funded, 'tokens-only', 7000n, 301n), 'insufficient_tokens'],
      ];
      for (const [item, code] of cases) expect(await reserveOne(item)).toMatchObject({ ok: false, code });
      const unfunded = await createFundedKey(context);
      expect(await reserveOne(reserveItem(unfunded, 'priced', 1n, 1n))).toMatchObject({
        code: 'insufficient_credits',
      });
      // An alias without a credit price can only be paid from a package: the truthful code names tokens.
      expect(await reserveOne(reserveItem(unfunded, 'tokens-only', 1n, 1n))).toMatchObject({
        code: 'insufficient_tokens',
      });
      expect(await balancesOf(context, funded.accountId)).toMatchObject({
        tokens: 7300n,
        reservedTokens: 0n,
      });
    });

    it('reserves nothing for an id the gateway released before its reserve arrived', async () => {
      const key = await createFundedKey(context, { credits: 10_000n });
      const item = reserveItem(key, 'priced', 10n, 10n);
      // The gateway gave up on the reserve and released its id; the reserve lands only afterwards.
      const released = await api.finish([
        endItem(key, item.reservationId, 'priced', 'release', 'gateway_error'),
      ]);
      expect(released.body.results[0]).toMatchObject({ status: 'released' });
      await reserveOne(item);
      expect(await balancesOf(context, key.accountId)).toEqual({
        tokens: 0n,
        reservedTokens: 0n,
        credits: 10_000n,
        reservedCredits: 0n,
      });
      const rows = await context.deps.db
        .selectFrom('reservations')
        .select(['status', 'reserved_credits'])
        .where('id', '=', item.reservationId)
        .execute();
      expect(rows).toEqual([{ status: 'released', reserved_credits: 0n }]);
    });

    it('answers a clean server_error when the money function returns something unexpected', async () => {
      const key = await createFundedKey(context, { credits: 10_000n });
      const item = reserveItem(key, 'priced', 1n, 1n);
      // Postgres alone reserves in tollgate_reserve; the hot tier writes finished calls with
      // tollgate_hot_persist. Either one answering nonsense must not become a crash.
      const [fn, garbage] = hotTier
        ? ['tollgate_hot_persist', `select jsonb_build_array(jsonb_build_object('reservation_id', 42))`]
        : [
            'tollgate_reserve',
            `select jsonb_build_array(jsonb_build_object('reservation_id', p_items->0->>'reservation_id',
               'ok', false, 'code', 'no_such_code'))`,
          ];
      if (hotTier) expect(await reserveOne(item)).toMatchObject({ ok: true });
      const settle = settleItem(key, item.reservationId, 'priced', 1n, 1n);
      const { rows } = await sql<{ args: string; types: string }>`
        select pg_get_function_arguments(oid) as args, pg_get_function_identity_arguments(oid) as types
        from pg_proc where proname = ${fn}`.execute(context.deps.db);
      const { args, types } = rows[0]!;
      await sql.raw(`alter function ${fn}(${types}) rename to ${fn}_real`).execute(context.deps.db);
      await sql
        .raw(`create function ${fn}(${args}) returns jsonb language sql as $fn$ ${garbage} $fn$`)
        .execute(context.deps.db);
      try {
        const response = hotTier ? await api.finish([settle]) : await api.reserve([item]);
        expect(response.status).toBe(500);
        expect(response.body).toMatchObject({ code: 'server_error' });
        expect(JSON.stringify(response.body)).not.toContain('TypeError');
      } finally {
        await sql.raw(`drop function ${fn}(${types})`).execute(context.deps.db);
        await sql.raw(`alter function ${fn}_real(${types}) rename to ${fn}`).execute(context.deps.db);
      }
      if (hotTier) {
        // The gateway sends the batch again: the call is charged once, as Redis recorded it.
        const again = await api.finish([settle]);
        expect(again.body.results[0]).toMatchObject({ status: 'settled', charged: { credits: '7' } });
        expect(await balancesOf(context, key.accountId)).toMatchObject({
          credits: 10_000n - 7n,
          reservedCredits: 0n,
        });
      }
    });

    it('bounds what runs past the balance in flight: with calls open, a new one must leave cover', async () => {
      // RESERVE_OVERRUN_COVER_PERCENT = 10 (the default).
      const key = await createFundedKey(context, { credits: 1000n });
      const first = await reserveOne(reserveItem(key, 'priced', 100n, 40n)); // 400 credits
      const second = await reserveOne(reserveItem(key, 'priced', 100n, 40n)); // 400: 200 left >= 10% of 800
      expect([first.ok, second.ok]).toEqual([true, true]);
      // 150 fits in the 200 left, but would leave 50 < 10% of 950 for overruns of the three calls.
      const third = reserveItem(key, 'priced', 25n, 20n);
      expect(await reserveOne(third)).toMatchObject({ ok: false, code: 'insufficient_credits' });
      await api.finish([settleItem(key, first.reservationId, 'priced', 100n, 40n)]);
      await api.finish([settleItem(key, second.reservationId, 'priced', 100n, 40n)]);
      // Nothing open any more: a call alone is admitted up to the last credit it needs.
      const alone = await reserveOne(reserveItem(key, 'priced', 25n, 20n));
      expect(alone).toMatchObject({ ok: true, reserved: { credits: '150' } });

      const tokens = await createFundedKey(context, { packages: ['small'] });
      expect((await reserveOne(reserveItem(tokens, 'tokens-only', 250n, 250n))).ok).toBe(true);
      expect((await reserveOne(reserveItem(tokens, 'tokens-only', 200n, 200n))).ok).toBe(true);
      expect(await reserveOne(reserveItem(tokens, 'tokens-only', 25n, 25n))).toMatchObject({
        ok: false,
        code: 'insufficient_tokens',
      });
    });

    it('refuses a revoked key in the very next call after revoke returns', async () => {
      const key = await createFundedKey(context, { packages: ['small'] });
      expect(await reserveOne(reserveItem(key, 'tokens-only', 1n, 1n))).toMatchObject({ ok: true });
      await changeKeyStatus(context.deps, key.accountId, key.keyId, 'revoked');
      expect(await reserveOne(reserveItem(key, 'tokens-only', 1n, 1n))).toMatchObject({
        ok: false,
        code: 'api_key_revoked',
      });
    });

    it('refuses disabled keys, expired keys and suspended accounts', async () => {
      const disabled = await createFundedKey(context, { packages: ['small'] });
      await changeKeyStatus(context.deps, disabled.accountId, disabled.keyId, 'disabled');
      expect(await reserveOne(reserveItem(disabled, 'tokens-only', 1n, 1n))).toMatchObject({
        code: 'api_key_disabled',
      });

      const expired = await createFundedKey(context, { packages: ['small'] });
      await context.deps.db
        .updateTable('api_keys')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('id', '=', expired.keyId)
        .execute();
      expect(await reserveOne(reserveItem(expired, 'tokens-only', 1n, 1n))).toMatchObject({
        code: 'api_key_expired',
      });

      const suspended = await createFundedKey(context, { packages: ['small'] });
      await context.deps.db
        .updateTable('accounts')
        .set({ status: 'suspended' })
        .where('id', '=', suspended.accountId)
        .execute();
      expect(await reserveOne(reserveItem(suspended, 'tokens-only', 1n, 1n))).toMatchObject({
        code: 'account_suspended',
      });
    });

    it('is idempotent by reservation id', async () => {
      const key = await createFundedKey(context, { packages: ['small'] });
      const item = reserveItem(key, 'tokens-only', 100n, 100n);
      const first = await reserveOne(item);
      const again = await reserveOne(item);
      expect(again).toEqual(first);
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 800n, reservedTokens: 200n });
    });
  });

  describe('settle', () => {
    it('charges the reported usage, never the estimate, and returns the rest', async () => {
      const key = await createFundedKey(context, { packages: ['small'], credits: 10_000n });
      const item = reserveItem(key, 'priced', 600n, 900n);
      await reserveOne(item);
      // Usage 700 in + 350 out = 1,050 tokens: 1,000 from the package (700 in, 300 out), 50 out from credit.
      const settled = await api.finish([settleItem(key, item.reservationId, 'priced', 700n, 350n)]);
      expect(settled.body.results[0]).toMatchObject({
        status: 'settled',
        charged: { tokens: '1000', credits: '250' },
        writtenOff: { tokens: '0', credits: '0' },
      });
      expect(await balancesOf(context, key.accountId)).toEqual({
        tokens: 0n,
        reservedTokens: 0n,
        credits: 9750n,
        reservedCredits: 0n,
      });
    });

    it('charges usage beyond the reservation up to what is left, and writes off the rest', async () => {
      const key = await createFundedKey(context, { packages: ['small'] });
      const item = reserveItem(key, 'tokens-only', 100n, 100n);
      await reserveOne(item);
      // 1,500 tokens used; the whole package is 1,000: 1,000 charged, 500 written off.
      const settled = await api.finish([settleItem(key, item.reservationId, 'tokens-only', 1000n, 500n)]);
      expect(settled.body.results[0]).toMatchObject({
        charged: { tokens: '1000' },
        writtenOff: { tokens: '500' },
      });
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 0n, reservedTokens: 0n });
      const writeOffs = await context.deps.db
        .selectFrom('ledger_entries')
        .select(['amount', 'available_delta'])
        .where('reservation_id', '=', item.reservationId)
        .where('kind', '=', 'write_off')
        .execute();
      expect(writeOffs).toEqual([{ amount: 500n, available_delta: 0n }]);
    });

    it('prices usage within the reservation at the prices of reservation time (R9)', async () => {
      const key = await createFundedKey(context, { credits: 10_000n });
      const item = reserveItem(key, 'priced', 100n, 100n); // 100 x 2 + 100 x 5 = 700 credits
      expect(await reserveOne(item)).toMatchObject({ ok: true, reserved: { credits: '700' } });
      await setPrice(context, 'priced', 3n, 7n);
      try {
        const settled = await api.finish([settleItem(key, item.reservationId, 'priced', 50n, 40n)]);
        // 50 x 2 + 40 x 5 = 300, not 50 x 3 + 40 x 7 = 430.
        expect(settled.body.results[0]).toMatchObject({ charged: { credits: '300' } });
      } finally {
        await setPrice(context, 'priced', 2n, 5n);
      }
      expect(await balancesOf(context, key.accountId)).toMatchObject({
        credits: 9_700n,
        reservedCredits: 0n,
      });
      expect(await spentOf(context, key.accountId)).toEqual({ credit: 300n });
    });

    it('prices usage beyond the reservation at the price of settle time (R10)', async () => {
      const key = await createFundedKey(context, { credits: 10_000n });
      const tokens = await grantEntitlement(context, key.accountId, { tokens: 100n });
      const item = reserveItem(key, 'priced', 60n, 40n); // all 100 from the entitlement, no credit leg
      expect(await reserveOne(item)).toMatchObject({ ok: true, reserved: { tokens: '100', credits: '0' } });
      await setPrice(context, 'priced', 3n, 7n);
      try {
        const settled = await api.finish([settleItem(key, item.reservationId, 'priced', 70n, 50n)]);
        // The entitlement pays 100 (70 in, 30 out); 20 output tokens beyond, at the new 7 each.
        expect(settled.body.results[0]).toMatchObject({
          charged: { tokens: '100', credits: '140' },
          writtenOff: { tokens: '0', credits: '0' },
        });
      } finally {
        await setPrice(context, 'priced', 2n, 5n);
      }
      expect(await spentOf(context, key.accountId)).toEqual({ [tokens]: 100n, credit: 140n });
      expect(await balancesOf(context, key.accountId)).toMatchObject({
        credits: 9_860n,
        reservedCredits: 0n,
      });
    });

    it('draws usage beyond the reservation from the next entitlement in draw order (R4, R10)', async () => {
      const key = await createFundedKey(context, { credits: 10_000n });
      const DAY = 86_400_000;
      const never = await grantEntitlement(context, key.accountId, { tokens: 1000n });
      const late = await grantEntitlement(context, key.accountId, { tokens: 1000n, expiresInMs: 20 * DAY });
      const soon = await grantEntitlement(context, key.accountId, { tokens: 100n, expiresInMs: 10 * DAY });
      const item = reserveItem(key, 'priced', 50n, 50n); // all from `soon`
      expect(await reserveOne(item)).toMatchObject({ ok: true, reserved: { tokens: '100', credits: '0' } });
      const settled = await api.finish([settleItem(key, item.reservationId, 'priced', 80n, 70n)]);
      expect(settled.body.results[0]).toMatchObject({ charged: { tokens: '150', credits: '0' } });
      expect(await spentOf(context, key.accountId)).toEqual({ [soon]: 100n, [late]: 50n });
      expect(await sourcesOf(context, key.accountId)).toEqual({
        [soon]: { remaining: 0n, reserved: 0n },
        [late]: { remaining: 950n, reserved: 0n },
        [never]: { remaining: 1000n, reserved: 0n },
        credit: { remaining: 10_000n, reserved: 0n },
      });
    });

    it('writes off credits owed beyond the balance, and no balance goes below zero (R10)', async () => {
      const key = await createFundedKey(context, { credits: 1000n });
      const item = reserveItem(key, 'priced', 10n, 10n); // 70 credits
      expect(await reserveOne(item)).toMatchObject({ ok: true, reserved: { credits: '70' } });
      // 300 x 2 + 100 x 5 = 1,100 owed; the account has 1,000 in all.
      const settled = await api.finish([settleItem(key, item.reservationId, 'priced', 300n, 100n)]);
      expect(settled.body.results[0]).toMatchObject({
        charged: { tokens: '0', credits: '1000' },
        writtenOff: { tokens: '0', credits: '100' },
      });
      expect(await balancesOf(context, key.accountId)).toEqual({
        tokens: 0n,
        reservedTokens: 0n,
        credits: 0n,
        reservedCredits: 0n,
      });
      expect(await spentOf(context, key.accountId)).toEqual({ credit: 1000n, 'writeOff:credits': 100n });
      const writeOffs = await context.deps.db
        .selectFrom('ledger_entries')
        .select(['amount', 'available_delta', 'reserved_delta'])
        .where('reservation_id', '=', item.reservationId)
        .where('kind', '=', 'write_off')
        .execute();
      expect(writeOffs).toEqual([{ amount: 100n, available_delta: 0n, reserved_delta: 0n }]);
    });

    it('still charges correctly when the reservation was forgotten (lost asynchronous commit)', async () => {
      const key = await createFundedKey(context, { packages: ['small'] });
      const reservationId = randomUUID();
      const settled = await api.finish([settleItem(key, reservationId, 'tokens-only', 30n, 20n)]);
      expect(settled.body.results[0]).toMatchObject({
        status: 'settled',
        replay: false,
        charged: { tokens: '50' },
      });
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 950n, reservedTokens: 0n });
      const again = await api.finish([settleItem(key, reservationId, 'tokens-only', 30n, 20n)]);
      expect(again.body.results[0]).toMatchObject({ replay: true });
      expect((await balancesOf(context, key.accountId)).tokens).toBe(950n);
    });
  });

  // Sequences the differential test (billing.differential.test.ts) found the engines disagreeing
  // on, shrunk, kept here.
  describe('weighted packages (R2b)', () => {
    async function withRate<T>(alias: string, rate: bigint, body: () => Promise<T>): Promise<T> {
      await setPackageRate(context, alias, rate);
      try {
        return await body();
      } finally {
        await setPackageRate(context, alias, 1n);
      }
    }

    it('weighted packages: one package serves aliases of different rates, each token at its alias rate', async () => {
      const key = await createFundedKey(context);
      const pack = await grantEntitlement(context, key.accountId, { tokens: 1000n, weighted: true });
      await withRate('priced', 5n, async () => {
        // 60 + 40 tokens of an alias at 5 units each: 500 units reserved.
        const first = reserveItem(key, 'priced', 60n, 40n);
        expect(await reserveOne(first)).toMatchObject({
          ok: true,
          reserved: { tokens: '500', credits: '0' },
        });
        const settled = await api.finish([settleItem(key, first.reservationId, 'priced', 30n, 20n)]);
        expect(settled.body.results[0]).toMatchObject({ charged: { tokens: '250', credits: '0' } });
        // 100 + 200 tokens of an alias at rate 1: 300 units.
        const second = reserveItem(key, 'tokens-only', 100n, 200n);
        expect(await reserveOne(second)).toMatchObject({
          ok: true,
          reserved: { tokens: '300', credits: '0' },
        });
      });
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 450n, reservedTokens: 300n });
      expect(await spentOf(context, key.accountId)).toEqual({ [pack]: 250n });
    });

    it('weighted packages: cover whole tokens only, credit pays the rest, and the units below a token stay', async () => {
      const key = await createFundedKey(context, { credits: 10_000n });
      const pack = await grantEntitlement(context, key.accountId, { tokens: 12n, weighted: true });
      await withRate('priced', 5n, async () => {
        // 12 units cover 2 tokens (10 units): 1 input and 1 output; 3 output tokens from credit at 5.
        const item = reserveItem(key, 'priced', 1n, 4n);
        expect(await reserveOne(item)).toMatchObject({ ok: true, reserved: { tokens: '10', credits: '15' } });
        const settled = await api.finish([settleItem(key, item.reservationId, 'priced', 1n, 2n)]);
        // 2 tokens from the package (10 units), 1 output token from credit (5).
        expect(settled.body.results[0]).toMatchObject({ charged: { tokens: '10', credits: '5' } });
      });
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 2n, credits: 9_995n });
      expect(await spentOf(context, key.accountId)).toEqual({ [pack]: 10n, credit: 5n });
    });

    it('weighted packages: a package counting raw tokens charges one per token whatever the rate', async () => {
      const key = await createFundedKey(context);
      const pack = await grantEntitlement(context, key.accountId, { tokens: 1000n });
      await withRate('priced', 5n, async () => {
        const item = reserveItem(key, 'priced', 60n, 40n);
        expect(await reserveOne(item)).toMatchObject({ ok: true, reserved: { tokens: '100', credits: '0' } });
        const settled = await api.finish([settleItem(key, item.reservationId, 'priced', 30n, 20n)]);
        expect(settled.body.results[0]).toMatchObject({ charged: { tokens: '50', credits: '0' } });
      });
      expect(await spentOf(context, key.accountId)).toEqual({ [pack]: 50n });
    });

    it('weighted packages: within the reservation at its rate, beyond it at the rate of settle time', async () => {
      const key = await createFundedKey(context);
      const pack = await grantEntitlement(context, key.accountId, { tokens: 1000n, weighted: true });
      await withRate('priced', 2n, async () => {
        const item = reserveItem(key, 'priced', 10n, 10n);
        expect(await reserveOne(item)).toMatchObject({ ok: true, reserved: { tokens: '40', credits: '0' } });
        await setPackageRate(context, 'priced', 3n);
        // 20 tokens within the reservation at 2 (40 units), 10 beyond it at 3 (30 units).
        const settled = await api.finish([settleItem(key, item.reservationId, 'priced', 15n, 15n)]);
        expect(settled.body.results[0]).toMatchObject({ charged: { tokens: '70', credits: '0' } });
      });
      expect(await spentOf(context, key.accountId)).toEqual({ [pack]: 70n });
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 930n, reservedTokens: 0n });
    });

    it.runIf(hotTier)(
      'the legs of the reserve answer tell what a settle within them charges (R9; receipts)',
      async () => {
        const key = await createFundedKey(context, { credits: 10_000n });
        await grantEntitlement(context, key.accountId, { tokens: 12n, weighted: true });
        await withRate('priced', 5n, async () => {
          const item = reserveItem(key, 'priced', 3n, 4n);
          const reserved = await reserveOne(item);
          expect(reserved).toMatchObject({
            ok: true,
            legs: [
              { source: 'entitlement', amount: '10', rate: '5' },
              { source: 'credit', amount: '22', price: { input: '2', output: '5', request: '0' } },
            ],
          });
          const legs = reserved.ok ? (reserved.legs ?? []) : [];
          const settle = settleItem(key, item.reservationId, 'priced', 2n, 2n, { cacheRead: 1n });
          const told = settle.action === 'settle' ? chargeWithinLegs(legs, settle.usage) : null;
          // 2 tokens from the package (10 units); 1 cache read at 2 and 2 output at 5 from credit.
          expect(told).toEqual({ tokens: '10', credits: '12' });
          const settled = await api.finish([settle]);
          expect(settled.body.results[0]).toMatchObject({
            charged: told,
            writtenOff: { tokens: '0', credits: '0' },
          });
          // Beyond the legs the settlement decides: nothing is told.
          expect(chargeWithinLegs(legs, { inputTokens: '3', outputTokens: '5' })).toBeNull();
        });
      },
    );
  });

  describe('found by the differential test', () => {
    const DAY = 86_400_000;

    it('charges usage beyond the reservation from credit granted while the call ran (R10)', async () => {
      const key = await createFundedKey(context, { credits: 100n });
      const item = reserveItem(key, 'priced', 10n, 10n); // 70 credits
      expect(await reserveOne(item)).toMatchObject({ ok: true, reserved: { credits: '70' } });
      await changeCredit(context.deps, {
        accountId: key.accountId,
        amount: 1000n,
        kind: 'grant',
        cause: 'test',
      });
      // 100 x 2 + 100 x 5 = 700: 70 from the reservation, 630 from the 1,030 left.
      const settled = await api.finish([settleItem(key, item.reservationId, 'priced', 100n, 100n)]);
      expect(settled.body.results[0]).toMatchObject({
        charged: { credits: '700' },
        writtenOff: { tokens: '0', credits: '0' },
      });
      expect(await balancesOf(context, key.accountId)).toMatchObject({ credits: 400n, reservedCredits: 0n });
    });

    it('charges a settle that arrives after its release from what the account has (R11, R14)', async () => {
      const key = await createFundedKey(context);
      const tokens = await grantEntitlement(context, key.accountId, { tokens: 1n });
      const item = reserveItem(key, 'priced', 0n, 1n);
      expect(await reserveOne(item)).toMatchObject({ ok: true, reserved: { tokens: '1' } });
      await api.finish([endItem(key, item.reservationId, 'priced', 'release', 'upstream_unavailable')]);
      const settled = await api.finish([settleItem(key, item.reservationId, 'priced', 0n, 1n)]);
      expect(settled.body.results[0]).toMatchObject({
        charged: { tokens: '1', credits: '0' },
        writtenOff: { tokens: '0', credits: '0' },
      });
      expect(await sourcesOf(context, key.accountId)).toEqual({
        [tokens]: { remaining: 0n, reserved: 0n },
        credit: { remaining: 0n, reserved: 0n },
      });
    });

    it('shows what a call gives back to an expired entitlement as its own, and a refund takes it (R9, R17)', async () => {
      const key = await createFundedKey(context);
      const tokens = await grantEntitlement(context, key.accountId, { tokens: 1n });
      const item = reserveItem(key, 'priced', 0n, 1n);
      expect(await reserveOne(item)).toMatchObject({ ok: true });
      await expireEntitlement(context, key.accountId, tokens);
      // The next call finds nothing to draw (the hot tier's lease drops the entitlement from its order).
      expect(await reserveOne(reserveItem(key, 'priced', 0n, 1n))).toMatchObject({ ok: false });
      await api.finish([endItem(key, item.reservationId, 'priced', 'release', 'upstream_unavailable')]);
      expect((await sourcesOf(context, key.accountId))[tokens]).toEqual({ remaining: 1n, reserved: 0n });
      await changeBalances(context.deps, (balances) =>
        clawBackOrderGrant(balances, {
          orderId: randomUUID(),
          accountId: key.accountId,
          entitlementId: tokens,
          bonusCredits: 0n,
          now: new Date(),
        }),
      );
      expect((await sourcesOf(context, key.accountId))[tokens]).toEqual({ remaining: 0n, reserved: 0n });
    });

    it('leaves balances as they were after a refused adjustment (R15)', async () => {
      const key = await createFundedKey(context);
      const tokens = await grantEntitlement(context, key.accountId, { tokens: 5n });
      expect(await reserveOne(reserveItem(key, 'priced', 0n, 1n))).toMatchObject({ ok: true });
      const refused = changeCredit(context.deps, {
        accountId: key.accountId,
        amount: -1n,
        kind: 'adjustment',
        cause: 'test',
      });
      await expect(refused).rejects.toMatchObject({ code: 'validation_failed' });
      expect(await sourcesOf(context, key.accountId)).toEqual({
        [tokens]: { remaining: 4n, reserved: 1n },
        credit: { remaining: 0n, reserved: 0n },
      });
    });

    it("lets the next call draw what an admin's release of a hold returned (R13)", async () => {
      const key = await createFundedKey(context);
      await grantEntitlement(context, key.accountId, { tokens: 100n });
      const held = reserveItem(key, 'priced', 0n, 1n);
      expect(await reserveOne(held)).toMatchObject({ ok: true });
      await api.finish([endItem(key, held.reservationId, 'priced', 'hold', 'billing_settlement_pending')]);
      await resolveHold(context.deps, held.reservationId, { action: 'release' });
      expect(await reserveOne(reserveItem(key, 'priced', 0n, 100n))).toMatchObject({
        ok: true,
        reserved: { tokens: '100' },
      });
    });

    it("charges an admin's settle of a hold beyond the reservation from what the account has (R10, R13)", async () => {
      const key = await createFundedKey(context);
      const tokens = await grantEntitlement(context, key.accountId, { tokens: 100n });
      const held = reserveItem(key, 'priced', 0n, 10n);
      expect(await reserveOne(held)).toMatchObject({ ok: true });
      await api.finish([endItem(key, held.reservationId, 'priced', 'hold', 'billing_settlement_pending')]);
      const resolved = await resolveHold(context.deps, held.reservationId, {
        action: 'settle',
        inputTokens: 20n,
        outputTokens: 30n,
      });
      expect(resolved).toMatchObject({ status: 'settled', charged: { tokens: '50', credits: '0' } });
      expect(await sourcesOf(context, key.accountId)).toEqual({
        [tokens]: { remaining: 50n, reserved: 0n },
        credit: { remaining: 0n, reserved: 0n },
      });
      expect(await spentOf(context, key.accountId)).toEqual({ [tokens]: 50n });
    });

    it('keeps cover for calls in flight on an entitlement that expired since (R7)', async () => {
      const key = await createFundedKey(context);
      const first = await grantEntitlement(context, key.accountId, { tokens: 1n, expiresInMs: DAY });
      expect(await reserveOne(reserveItem(key, 'tokens-only', 0n, 1n))).toMatchObject({ ok: true });
      await expireEntitlement(context, key.accountId, first);
      await grantEntitlement(context, key.accountId, { tokens: 10n });
      // 10 of 10 would leave nothing for the overrun of the call still running on `first`.
      expect(await reserveOne(reserveItem(key, 'tokens-only', 0n, 10n))).toMatchObject({
        ok: false,
        code: 'insufficient_tokens',
      });
      expect(await reserveOne(reserveItem(key, 'tokens-only', 0n, 9n))).toMatchObject({ ok: true });
    });
  });

  describe("the hot tier's bound, 2^43 (R21)", () => {
    it('reserves and settles an estimate just below it and one at it exactly, losing nothing', async () => {
      const BOUND = 2n ** 43n;
      const key = await createFundedKey(context);
      const granted = 3n * BOUND + 7n;
      await grantEntitlement(context, key.accountId, { tokens: granted });
      // Just below: the hot tier answers it from its lease; at the bound: Postgres does (R21).
      const below = reserveItem(key, 'tokens-only', BOUND - 2n, 1n);
      const at = reserveItem(key, 'tokens-only', BOUND - 1n, 1n);
      expect(await reserveOne(below)).toMatchObject({ ok: true, reserved: { tokens: String(BOUND - 1n) } });
      expect(await reserveOne(at)).toMatchObject({ ok: true, reserved: { tokens: String(BOUND) } });
      const settled = await api.finish([
        settleItem(key, below.reservationId, 'tokens-only', BOUND - 3n, 1n),
        settleItem(key, at.reservationId, 'tokens-only', BOUND - 1n, 1n),
      ]);
      expect(settled.body.results.map((result) => result.charged.tokens)).toEqual([
        String(BOUND - 2n),
        String(BOUND),
      ]);
      expect(await balancesOf(context, key.accountId)).toEqual({
        tokens: granted - (2n * BOUND - 2n),
        reservedTokens: 0n,
        credits: 0n,
        reservedCredits: 0n,
      });
    });
  });

  describe('quantities above 2^53', () => {
    it('are stored, reserved, settled and returned exactly', async () => {
      const key = await createFundedKey(context, { packages: ['huge'], credits: 9_007_199_254_740_993n });
      const item = reserveItem(key, 'tokens-only', 9_007_199_254_740_993n, 3n);
      expect(await reserveOne(item)).toMatchObject({ ok: true, reserved: { tokens: '9007199254740996' } });
      const settled = await api.finish([
        settleItem(key, item.reservationId, 'tokens-only', 9_007_199_254_740_993n, 1n),
      ]);
      expect(settled.body.results[0]).toMatchObject({ charged: { tokens: '9007199254740994' } });
      expect(await balancesOf(context, key.accountId)).toEqual({
        tokens: 18_014_398_509_481_984n - 9_007_199_254_740_994n,
        reservedTokens: 0n,
        credits: 9_007_199_254_740_993n,
        reservedCredits: 0n,
      });
    });
  });

  describe('reconciler', () => {
    it('holds (never silently releases) reservations nobody settled within the timeout; releases expired holds', async () => {
      const key = await createFundedKey(context, { packages: ['small'] });
      const stale = reserveItem(key, 'tokens-only', 100n, 100n);
      const held = reserveItem(key, 'tokens-only', 50n, 50n);
      await reserveOne(stale);
      await reserveOne(held);
      await api.finish([
        endItem(key, held.reservationId, 'tokens-only', 'hold', 'billing_settlement_pending'),
      ]);

      context.clock.advance(context.deps.config.billing.reservationTimeoutMs + 1000);
      const first = await reconcileOnce(context.deps);
      expect(first.reservations).toContainEqual({
        id: stale.reservationId,
        accountId: key.accountId,
        alias: 'tokens-only',
        action: 'hold',
        reason: 'settlement_missing',
      });
      const statuses = await context.deps.db
        .selectFrom('reservations')
        .select(['id', 'status', 'outcome'])
        .where('id', 'in', [stale.reservationId, held.reservationId])
        .execute();
      expect(statuses).toContainEqual({
        id: stale.reservationId,
        status: 'held',
        outcome: 'settlement_missing',
      });
      expect(statuses).toContainEqual({
        id: held.reservationId,
        status: 'held',
        outcome: 'billing_settlement_pending',
      });
      // Visible, with its reason, where an operator reviews holds.
      const listed = await listHeld(context.deps, 1000);
      expect(listed).toContainEqual(
        expect.objectContaining({ id: stale.reservationId, reason: 'settlement_missing' }),
      );
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 700n, reservedTokens: 300n });

      context.clock.advance(context.deps.config.billing.holdTimeoutMs + 1000);
      const second = await reconcileOnce(context.deps);
      expect(second.reservations.filter((row) => row.accountId === key.accountId)).toHaveLength(2);
      expect(
        second.reservations.every((row) => row.action === 'release' && row.reason === 'hold_expired'),
      ).toBe(true);
      expect(await balancesOf(context, key.accountId)).toMatchObject({ tokens: 1000n, reservedTokens: 0n });

      // A settle that arrives after the timeout still charges what was used.
      const late = await api.finish([settleItem(key, stale.reservationId, 'tokens-only', 10n, 10n)]);
      expect(late.body.results[0]).toMatchObject({ status: 'settled', charged: { tokens: '20' } });
      expect((await balancesOf(context, key.accountId)).tokens).toBe(980n);
    });
  });
});
