import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  balancesOf,
  createFundedKey,
  endItem,
  expectLedgerConsistent,
  type FundedKey,
  reserveItem,
  settleItem,
} from '../../../../test/billing.ts';
import type { TestContext } from '../../../../test/context.ts';
import { closeHotTierFixture, createHotTierFixture, type HotTierFixture } from '../../../../test/hot-tier.ts';
import { changeKeyStatus } from '../../api-keys/api-keys.service.ts';
import { changeCredit, grantPackage } from '../billing.service.ts';
import { changeBalances } from '../engines.ts';
import { clawBackOrderGrant } from '../order-grants.ts';
import { reconcileOnce } from '../reconciler.ts';
import { createHotEngine, type HotEngine } from './hot-engine.ts';
import { openHotTier } from './hot-tier.ts';

/**
 * What only the hot tier has: leases of balances in Redis, finished calls written to Postgres
 * after Redis applied them, and the ways Redis and Postgres can fall apart (a control plane that
 * stops between the two, Redis losing an account's state, two control planes opening a lease at
 * once, balance changes made in Postgres while a lease is out). The money rules themselves are
 * tested on both engines in billing.rules.test.ts.
 */

let context: TestContext;
let api: HotTierFixture['api'];
let redis: Redis;

beforeAll(async () => {
  ({ context, api, redis } = await createHotTierFixture('hot-tier', {
    HOT_WRITE_GRACE_SECONDS: '5',
    HOT_LEASE_IDLE_SECONDS: '60',
  }));
});
afterEach(() => expectLedgerConsistent(context));
afterAll(() => closeHotTierFixture({ context, redis }));

const hot = () => (context.deps.billing as HotEngine).tier;
const keysOf = (accountId: string) => hot().store.keysOf(accountId);

async function reserveOk(key: FundedKey, alias: string, input: bigint, output: bigint) {
  const item = reserveItem(key, alias, input, output);
  const response = await api.reserve([item]);
  expect(response.body.results[0]).toMatchObject({ ok: true });
  return item;
}

async function openLeases(accountId: string) {
  return context.deps.db
    .selectFrom('hot_leases')
    .select(['id', 'close_reason'])
    .where('account_id', '=', accountId)
    .where('closed_at', 'is', null)
    .execute();
}

async function rowsOf(accountId: string) {
  return context.deps.db
    .selectFrom('reservations')
    .select(['id', 'status', 'charged_credits', 'charged_tokens', 'hold_reason'])
    .where('account_id', '=', accountId)
    .execute();
}

describe('a lease', () => {
  it('moves what the account can spend to reserved in Postgres, and shows as spendable all the same', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    await reserveOk(key, 'priced', 10n, 10n);
    // Postgres: the whole credit is leased (reserved); the account sees 70 in flight, the rest free.
    const credit = await context.deps.db
      .selectFrom('credit_balances')
      .select(['available', 'reserved'])
      .where('account_id', '=', key.accountId)
      .executeTakeFirstOrThrow();
    expect(credit).toEqual({ available: 0n, reserved: 10_000n });
    expect(await balancesOf(context, key.accountId)).toMatchObject({ credits: 9_930n, reservedCredits: 70n });
    expect(await openLeases(key.accountId)).toHaveLength(1);
  });

  it('is returned to Postgres once idle, and opened again by the next call', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const item = await reserveOk(key, 'priced', 10n, 10n);
    await api.finish([settleItem(key, item.reservationId, 'priced', 5n, 5n)]);
    context.clock.advance(context.deps.config.hotTier!.idleMs + 1_000);
    await reconcileOnce(context.deps);
    expect(await openLeases(key.accountId)).toEqual([]);
    expect(await redis.exists(keysOf(key.accountId).lease)).toBe(0);
    const credit = await context.deps.db
      .selectFrom('credit_balances')
      .select(['available', 'reserved'])
      .where('account_id', '=', key.accountId)
      .executeTakeFirstOrThrow();
    expect(credit).toEqual({ available: 10_000n - 35n, reserved: 0n });
    await reserveOk(key, 'priced', 10n, 10n);
    expect(await openLeases(key.accountId)).toHaveLength(1);
  });

  it('waits for a lease another control plane is slow to open, rather than refuse the call', async () => {
    const key = await createFundedKey(context, { credits: 1_000n });
    // Another control plane holds the claim to open this lease for 600 ms, as one whose database
    // transaction is slow under load would; the call waits for it instead of failing.
    expect(await hot().store.claim(key.accountId, 'another-control-plane', 600, 'claim')).toBe('claimed');
    const startedAt = performance.now();
    const item = reserveItem(key, 'priced', 10n, 10n);
    const answer = await hot().reserve({ items: [item] });
    expect(answer.results[0]).toMatchObject({ ok: true });
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(500);
    await api.finish([endItem(key, item.reservationId, 'priced', 'release', 'ok')]);
    expect(await balancesOf(context, key.accountId)).toMatchObject({ credits: 1_000n, reservedCredits: 0n });
  });

  it('is opened once when two control planes ask for it at the same time', async () => {
    const second = openHotTier(context.deps.config, context.deps)!;
    try {
      const key = await createFundedKey(context, { credits: 1_000n });
      const items = Array.from({ length: 10 }, () => reserveItem(key, 'priced', 10n, 10n));
      const answers = await Promise.all(
        items.map((item, index) => (index % 2 === 0 ? hot() : second).reserve({ items: [item] })),
      );
      expect(answers.every((answer) => answer.results[0]!.ok)).toBe(true);
      expect(await openLeases(key.accountId)).toHaveLength(1);
      expect(await balancesOf(context, key.accountId)).toMatchObject({
        credits: 300n,
        reservedCredits: 700n,
      });
      for (const item of items)
        await api.finish([endItem(key, item.reservationId, 'priced', 'release', 'ok')]);
      expect(await balancesOf(context, key.accountId)).toMatchObject({
        credits: 1_000n,
        reservedCredits: 0n,
      });
    } finally {
      await second.close();
    }
  });
});

describe('balance changes made in Postgres while a lease is out', () => {
  it('a package bought while credit is leased is drawn first from the next call on', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    await reserveOk(key, 'priced', 10n, 10n); // 70 credits
    await grantPackage(context.deps, { accountId: key.accountId, packageId: 'small', cause: 'test' });
    // The lease gave back what it held free; the next call tops it up, in draw order: the package first.
    const next = reserveItem(key, 'priced', 10n, 10n);
    expect((await api.reserve([next])).body.results[0]).toMatchObject({
      ok: true,
      reserved: { tokens: '20', credits: '0' },
    });
    expect(await balancesOf(context, key.accountId)).toEqual({
      tokens: 980n,
      reservedTokens: 20n,
      credits: 9_930n,
      reservedCredits: 70n,
    });
  });

  it('a refunded package is drawn from no more, even for what a call in flight gives back', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const { entitlementId } = await grantPackage(context.deps, {
      accountId: key.accountId,
      packageId: 'small',
      cause: 'test',
    });
    const inFlight = await reserveOk(key, 'priced', 100n, 100n); // 200 tokens of the package
    await changeBalances(context.deps, (balances) =>
      clawBackOrderGrant(balances, {
        orderId: randomUUID(),
        accountId: key.accountId,
        entitlementId,
        bonusCredits: 0n,
        now: new Date(),
      }),
    );
    // The call in flight ends having used nothing: its 200 tokens go back to the lease...
    await api.finish([endItem(key, inFlight.reservationId, 'priced', 'release', 'upstream_unavailable')]);
    // ...and yet the next call pays from credit: the package ended at the refund.
    const next = reserveItem(key, 'priced', 10n, 10n);
    expect((await api.reserve([next])).body.results[0]).toMatchObject({
      ok: true,
      reserved: { tokens: '0', credits: '70' },
    });
  });

  it('an adjustment down can take credit the lease held free, never what calls in flight hold', async () => {
    const key = await createFundedKey(context, { credits: 1_000n });
    await reserveOk(key, 'priced', 100n, 100n); // 700 in flight
    await changeCredit(context.deps, {
      accountId: key.accountId,
      amount: -300n,
      kind: 'adjustment',
      cause: 'test',
    });
    expect(await balancesOf(context, key.accountId)).toMatchObject({ credits: 0n, reservedCredits: 700n });
    await expect(
      changeCredit(context.deps, {
        accountId: key.accountId,
        amount: -1n,
        kind: 'adjustment',
        cause: 'test',
      }),
    ).rejects.toMatchObject({ code: 'validation_failed' });
  });
});

describe('a control plane that stops between Redis and Postgres', () => {
  it('leaves a finished call that the reconcile pass writes once, and a later repeat changes nothing', async () => {
    // The pass compares Redis's time with the clock, which earlier tests moved on: a clock of its own.
    context.clock.advance(-context.clock.offset());
    const key = await createFundedKey(context, { credits: 10_000n });
    const item = await reserveOk(key, 'priced', 10n, 10n);
    // Redis applies the settle; the control plane stops before Postgres has it (and the gateway too).
    const names = keysOf(key.accountId);
    const [reply] = await hot().store.run('hotFinish', {
      keys: { lease: names.lease, calls: names.calls },
      args: { forgotten: '0', topupAllowed: '1' },
      items: [
        {
          keys: {},
          args: {
            id: item.reservationId,
            action: 'settle',
            usageIn: '4',
            usageOut: '6',
            outcome: 'ok',
            httpStatus: '200',
            keyId: key.keyId,
            alias: 'priced',
            surface: 'chat_completions',
            inputPrice: '2',
            outputPrice: '5',
            created: '0',
            packageRate: '1',
          },
        },
      ],
    });
    expect(reply![0]).toBe('done');
    expect(await rowsOf(key.accountId)).toEqual([]);
    // Not before the grace period: its own control plane may still be writing it.
    await reconcileOnce(context.deps);
    expect(await rowsOf(key.accountId)).toEqual([]);
    context.clock.advance(context.deps.config.hotTier!.writeGraceMs + 1_000);
    await reconcileOnce(context.deps);
    expect(await rowsOf(key.accountId)).toMatchObject([{ status: 'settled', charged_credits: 38n }]);
    expect(await redis.hlen(names.calls)).toBe(0);
    // The gateway's own delivery comes at last: a replay, charged once.
    const again = await api.finish([settleItem(key, item.reservationId, 'priced', 4n, 6n)]);
    expect(again.body.results[0]).toMatchObject({
      status: 'settled',
      replay: true,
      charged: { credits: '38' },
    });
    expect(await balancesOf(context, key.accountId)).toMatchObject({
      credits: 10_000n - 38n,
      reservedCredits: 0n,
    });
  });
});

describe('Redis losing an account', () => {
  it('charges the calls it had in flight against a new lease, exactly, and closes the old one', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const inFlight = await reserveOk(key, 'priced', 100n, 100n);
    const [lost] = await openLeases(key.accountId);
    const names = keysOf(key.accountId);
    await redis.del(names.lease, names.calls, names.account, names.key(key.keyId));
    // The call's settlement arrives: Redis knows nothing of it any more.
    const settled = await api.finish([settleItem(key, inFlight.reservationId, 'priced', 30n, 40n)]);
    expect(settled.body.results[0]).toMatchObject({ status: 'settled', charged: { credits: '260' } });
    const [fresh] = await openLeases(key.accountId);
    expect(fresh!.id).not.toBe(lost!.id);
    const closed = await context.deps.db
      .selectFrom('hot_leases')
      .select('close_reason')
      .where('id', '=', lost!.id)
      .executeTakeFirstOrThrow();
    expect(closed.close_reason).toBe('orphaned');
    expect(await balancesOf(context, key.accountId)).toMatchObject({
      credits: 10_000n - 260n,
      reservedCredits: 0n,
    });
    // A release of a call it never saw leaves a tombstone: the reserve arriving late reserves nothing.
    const late = reserveItem(key, 'priced', 10n, 10n);
    await api.finish([endItem(key, late.reservationId, 'priced', 'release', 'gateway_error')]);
    expect((await api.reserve([late])).body.results[0]).toMatchObject({
      ok: true,
      reserved: { credits: '0' },
    });
    expect(await balancesOf(context, key.accountId)).toMatchObject({
      credits: 10_000n - 260n,
      reservedCredits: 0n,
    });
  });

  it('holds a call nobody finished within the reservation timeout, never releasing it unseen', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const forgotten = await reserveOk(key, 'priced', 10n, 10n);
    context.clock.advance(context.deps.config.billing.reservationTimeoutMs + 1_000);
    const pass = await reconcileOnce(context.deps);
    expect(pass.reservations).toContainEqual(
      expect.objectContaining({ id: forgotten.reservationId, action: 'hold', reason: 'settlement_missing' }),
    );
    expect(await rowsOf(key.accountId)).toMatchObject([
      { status: 'held', hold_reason: 'settlement_missing' },
    ]);
    expect(await balancesOf(context, key.accountId)).toMatchObject({ credits: 9_930n, reservedCredits: 70n });
    // The settlement comes after all: charged from what the hold kept aside, once.
    const late = await api.finish([settleItem(key, forgotten.reservationId, 'priced', 5n, 5n)]);
    expect(late.body.results[0]).toMatchObject({ status: 'settled', charged: { credits: '35' } });
    expect(await balancesOf(context, key.accountId)).toMatchObject({
      credits: 10_000n - 35n,
      reservedCredits: 0n,
    });
  });
});

describe("a key's state in Redis", () => {
  it('is never brought back by a read older than a change', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    await reserveOk(key, 'priced', 1n, 1n);
    const entry = keysOf(key.accountId).key(key.keyId);
    const active = (await redis.get(entry))!;
    await changeKeyStatus(context.deps, key.accountId, key.keyId, 'revoked');
    const revoked = (await redis.get(entry))!;
    expect(revoked.split('|')[1]).toBe('revoked');
    // A control plane that read the key before the change writes what it read: refused.
    expect(await hot().store.writeEntry(entry, active, 60_000, Date.now())).toBe('older');
    expect(await redis.get(entry)).toBe(revoked);
    expect((await api.reserve([reserveItem(key, 'priced', 1n, 1n)])).body.results[0]).toMatchObject({
      ok: false,
      code: 'api_key_revoked',
    });
  });

  it('cannot change while Redis is unreachable: the change is refused and nothing changes', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const unreachable = openHotTier(
      { ...context.deps.config, redisUrl: 'redis://127.0.0.1:1' },
      { ...context.deps, logger: context.deps.logger },
    )!;
    try {
      await expect(
        changeKeyStatus(
          { ...context.deps, billing: createHotEngine(unreachable, context.deps) },
          key.accountId,
          key.keyId,
          'disabled',
        ),
      ).rejects.toMatchObject({ code: 'server_error', status: 503 });
      const row = await context.deps.db
        .selectFrom('api_keys')
        .select('status')
        .where('id', '=', key.keyId)
        .executeTakeFirstOrThrow();
      expect(row.status).toBe('active');
    } finally {
      await unreachable.close();
    }
  });
});

describe('a Postgres engine reservation of the same account', () => {
  it('reserves an estimate too large for the hot tier in Postgres, after the lease gives back what it holds free', async () => {
    const key = await createFundedKey(context, { packages: ['huge'] });
    await reserveOk(key, 'tokens-only', 10n, 10n);
    const big = reserveItem(key, 'tokens-only', 2n ** 51n, 10n);
    expect((await api.reserve([big])).body.results[0]).toMatchObject({ ok: true });
    const settled = await api.finish([settleItem(key, big.reservationId, 'tokens-only', 7n, 3n)]);
    expect(settled.body.results[0]).toMatchObject({ status: 'settled', charged: { tokens: '10' } });
    expect(await balancesOf(context, key.accountId)).toMatchObject({
      tokens: 18_014_398_509_481_984n - 10n - 20n,
      reservedTokens: 20n,
    });
    expect((await rowsOf(key.accountId)).map((row) => row.id)).toContain(big.reservationId);
  });
});

describe('a finished call once Postgres has it', () => {
  it('is answered without waiting for Redis to forget it; repeats before and after are charged once', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const item = await reserveOk(key, 'priced', 10n, 10n);
    const settle = settleItem(key, item.reservationId, 'priced', 4n, 6n);
    // Redis answers "forget these" slowly: the settlement's answer must not wait for it.
    const slowForget = 2_000;
    const store = hot().store;
    const written = store.written.bind(store);
    const spy = vi.spyOn(store, 'written').mockImplementation(async (...args) => {
      await new Promise((resolve) => setTimeout(resolve, slowForget)); // the slow Redis, as above
      return written(...args);
    });
    try {
      const started = performance.now();
      const first = await api.finish([settle]);
      expect(performance.now() - started).toBeLessThan(slowForget);
      expect(first.body.results[0]).toMatchObject({
        status: 'settled',
        replay: false,
        charged: { credits: '38' },
      });
      // Still in Redis: answered from there, written once.
      const repeat = await api.finish([settle]);
      expect(repeat.body.results[0]).toMatchObject({
        status: 'settled',
        replay: true,
        charged: { credits: '38' },
      });
    } finally {
      spy.mockRestore();
    }
    // The reconciler's pass has Redis forget what was written; a repeat then finds it in Postgres.
    await reconcileOnce(context.deps);
    expect(await redis.hexists(keysOf(key.accountId).calls, item.reservationId)).toBe(0);
    const late = await api.finish([settle]);
    expect(late.body.results[0]).toMatchObject({
      status: 'settled',
      replay: true,
      charged: { credits: '38' },
    });
    expect(await balancesOf(context, key.accountId)).toMatchObject({
      credits: 10_000n - 38n,
      reservedCredits: 0n,
    });
  });
});

describe("a conversation's affinity record sent with a reservation", () => {
  const hash = (seed: string) => seed.repeat(43).slice(0, 43);
  const recordOf = (accountId: string, seed: string) => `test-gw:affinity:{a:${accountId}}:${hash(seed)}`;

  it('is read and renewed in the reserving step, answered as pinned (null when there is none)', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const record = recordOf(key.accountId, 'a');
    await redis.set(record, 'mock-openai/mock-gpt-2', 'PX', 1_000);
    const pinned = { ...reserveItem(key, 'priced', 10n, 10n), affinity: { record, ttlMs: 600_000 } };
    const none = {
      ...reserveItem(key, 'priced', 10n, 10n),
      affinity: { record: recordOf(key.accountId, 'b'), ttlMs: 600_000 },
    };
    const plain = reserveItem(key, 'priced', 10n, 10n);
    const { results } = (await api.reserve([pinned, none, plain])).body;
    expect(results[0]).toMatchObject({ ok: true, pinned: 'mock-openai/mock-gpt-2' });
    expect(results[1]).toMatchObject({ ok: true, pinned: null });
    expect(results[2]).toMatchObject({ ok: true });
    expect(results[2]).not.toHaveProperty('pinned');
    // Renewed for the item's time to live, not left to expire after the 1 s it was set for.
    expect(await redis.pttl(record)).toBeGreaterThan(500_000);
    // A repeat of the reservation answers it too.
    expect((await api.reserve([pinned])).body.results[0]).toMatchObject({
      ok: true,
      pinned: 'mock-openai/mock-gpt-2',
    });
    await api.finish(
      [pinned, none, plain].map((item) =>
        endItem(key, item.reservationId, 'priced', 'release', 'client_disconnected'),
      ),
    );
  });

  it("is left to the gateway when it is not an affinity record of the call's own account", async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const other = await createFundedKey(context, { credits: 10_000n });
    const lease = keysOf(key.accountId).lease;
    const items = [
      // Another account's record (another slot), one of the hot tier's own keys, a malformed name.
      recordOf(other.accountId, 'c'),
      lease,
      `test-gw:affinity:{a:${key.accountId}}:short`,
    ].map((record) => ({ ...reserveItem(key, 'priced', 10n, 10n), affinity: { record, ttlMs: 600_000 } }));
    const { results } = (await api.reserve(items)).body;
    for (const result of results) {
      expect(result).toMatchObject({ ok: true });
      expect(result).not.toHaveProperty('pinned');
    }
    await api.finish(
      items.map((item) => endItem(key, item.reservationId, 'priced', 'release', 'client_disconnected')),
    );
  });

  it('costs the call nothing but its affinity when the record is not a string', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const record = recordOf(key.accountId, 'd');
    await redis.hset(record, 'field', 'value');
    const item = { ...reserveItem(key, 'priced', 10n, 10n), affinity: { record, ttlMs: 600_000 } };
    expect((await api.reserve([item])).body.results[0]).toMatchObject({ ok: true, pinned: null });
    await api.finish([endItem(key, item.reservationId, 'priced', 'release', 'client_disconnected')]);
    // A hash has no time to live of its own: not left behind in the shared Redis.
    await redis.del(record);
  });
});
