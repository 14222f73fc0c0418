import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  balancesOf,
  createFundedKey,
  expectLedgerConsistent,
  grantEntitlement,
  internalApi,
  reserveItem,
  seedCatalog,
  settleItem,
} from '../../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../../test/context.ts';
import type { HotEngine } from './hot-engine.ts';
import { LEASE_CAP } from './hot-leases.ts';

/**
 * The hot tier counts in doubles, exact below 2^53 (docs/decisions/hot-tier-integers.md): what a
 * lease holds, all sources together, is at most LEASE_CAP = 2^43, so the sums the scripts form
 * over sources, and those sums times the overrun cover's per cent (at most 1,000), stay exact
 * however many sources an account has.
 */

let context: TestContext;
let api: ReturnType<typeof internalApi>;
let redis: Redis;
const DAY = 86_400_000;

beforeAll(async () => {
  context = await createTestContext('hot-integers', {}, { hotTier: true });
  await seedCatalog(context);
  api = internalApi(context);
  redis = new Redis(context.redisUrl);
});
afterEach(() => expectLedgerConsistent(context));
afterAll(async () => {
  redis.disconnect();
  await context.close();
});

function tier() {
  return (context.deps.billing as HotEngine).tier;
}

/** What the account's lease holds in Redis, free and in flight, all sources together. */
async function leaseHolds(accountId: string): Promise<bigint> {
  const lease = await redis.hgetall(tier().store.keysOf(accountId).lease);
  return Object.entries(lease)
    .filter(([field]) => field.startsWith('r:') || field.startsWith('h:'))
    .reduce((sum, [, value]) => sum + BigInt(value), 0n);
}

describe('a lease of an account with nine sources near 2^50', () => {
  it('holds at most 2^43 in all, and charges a call drawn from two of them exactly', async () => {
    expect(LEASE_CAP).toBe(2n ** 43n);
    const key = await createFundedKey(context);
    const small = 2n ** 42n + 3n;
    const near = 2n ** 50n - 1n;
    // The smallest expires first, so a call draws from it and then from the next.
    await grantEntitlement(context, key.accountId, { tokens: small, expiresInMs: DAY });
    for (let index = 0; index < 8; index += 1) {
      await grantEntitlement(context, key.accountId, { tokens: near, expiresInMs: (index + 2) * DAY });
    }
    const total = small + 8n * near;
    // 2^42 + 5 + 2^41: more than the first source has, well below the lease.
    const item = reserveItem(key, 'tokens-only', 2n ** 42n + 5n, 2n ** 41n);
    expect((await api.reserve([item])).body.results[0]).toMatchObject({
      ok: true,
      reserved: { tokens: String(2n ** 42n + 5n + 2n ** 41n) },
    });
    // Each of nine sources held up to 2^50 before: 2^53 together, past what a double holds exactly.
    expect(await leaseHolds(key.accountId)).toBe(LEASE_CAP);

    // A second call, judged by the overrun cover over the sums of every source (R7).
    const held = 2n ** 42n + 5n + 2n ** 41n;
    const second = reserveItem(key, 'tokens-only', 1n, 1n);
    expect((await api.reserve([second])).body.results[0]).toMatchObject({ ok: true });

    const settled = await api.finish([
      settleItem(key, item.reservationId, 'tokens-only', 2n ** 42n + 4n, 2n ** 41n + 1n),
      settleItem(key, second.reservationId, 'tokens-only', 1n, 1n),
    ]);
    expect(settled.body.results.map((result) => result.charged.tokens)).toEqual([String(held), '2']);
    expect(await balancesOf(context, key.accountId)).toEqual({
      tokens: total - held - 2n,
      reservedTokens: 0n,
      credits: 0n,
      reservedCredits: 0n,
    });
  });
});

describe('an account holding far more than the bound (10^15 credits)', () => {
  // 'priced': 2 credits per input token, 5 per output token.
  const cost = (input: bigint, output: bigint) => 2n * input + 5n * output;

  it('answers 200 sequential calls from one lease, refilled at most a handful of times', async () => {
    const credits = 10n ** 15n;
    const key = await createFundedKey(context, { credits });
    // Every lease opening and top-up writes the lease to Redis once (hot-leases.ts).
    const writes = vi.spyOn(tier().store, 'writeLease');
    try {
      for (let call = 0; call < 200; call += 1) {
        const item = reserveItem(key, 'priced', 1_000n, 100n);
        expect((await api.reserve([item])).body.results[0]).toMatchObject({ ok: true });
        const settled = await api.finish([settleItem(key, item.reservationId, 'priced', 900n, 50n)]);
        expect(settled.body.results[0]!.charged.credits).toBe(String(cost(900n, 50n)));
      }
      expect(writes.mock.calls.length).toBeLessThanOrEqual(3);
    } finally {
      writes.mockRestore();
    }
    expect(await leaseHolds(key.accountId)).toBeLessThanOrEqual(LEASE_CAP);
    expect(await balancesOf(context, key.accountId)).toMatchObject({
      credits: credits - 200n * cost(900n, 50n),
      reservedCredits: 0n,
    });
  });

  it('makes a call its lease cannot cover in Postgres, from the rest of the account, instead of refusing it', async () => {
    const credits = 10n ** 15n;
    const key = await createFundedKey(context, { credits });
    // Each holds 2^42 + 500 credits: the first from the lease, which then has too little left.
    const first = reserveItem(key, 'priced', 2n ** 41n, 100n);
    const second = reserveItem(key, 'priced', 2n ** 41n, 100n);
    const held = cost(2n ** 41n, 100n);
    expect((await api.reserve([first])).body.results[0]).toMatchObject({
      ok: true,
      reserved: { credits: String(held) },
    });
    expect((await api.reserve([second])).body.results[0]).toMatchObject({
      ok: true,
      reserved: { credits: String(held) },
    });
    const settled = await api.finish([
      settleItem(key, first.reservationId, 'priced', 2n ** 41n, 100n),
      settleItem(key, second.reservationId, 'priced', 2n ** 40n, 1n),
    ]);
    expect(settled.body.results.map((result) => result.charged.credits)).toEqual([
      String(held),
      String(cost(2n ** 40n, 1n)),
    ]);
    expect(await balancesOf(context, key.accountId)).toMatchObject({
      credits: credits - held - cost(2n ** 40n, 1n),
      reservedCredits: 0n,
    });
  });
});

describe("a source's net leased amount, past 2^53 over a lease's long life", () => {
  // Postgres sends it modulo 2^52 (tollgate_hot_state); the scripts use only its change.
  const MOD = 2n ** 52n;

  it('moves what the lease holds free by exactly its change, across the modulus too', async () => {
    const store = tier().store;
    const accountId = randomUUID();
    const leaseId = randomUUID();
    const names = store.keysOf(accountId);
    const write = (mode: 'install' | 'sync', version: bigint, net: bigint, token = '') =>
      store.writeLease(accountId, {
        mode,
        token,
        leaseId,
        version: String(version),
        cut: '',
        sources: [{ id: 'c', net: String(net % MOD), expiresAt: '0', aliases: '', weighted: '0' }],
      });
    const token = randomUUID();
    expect(await store.claim(accountId, token, 5_000, 'claim')).toBe('claimed');
    expect(await write('install', 1n, 100n, token)).toBe('installed');
    // Long after: 2^53 + 2^52 - 3 leased net in all, 100 of it free (the rest spent).
    const before = 2n ** 53n + MOD - 3n;
    await redis.hset(names.lease, 'n:c', String(before % MOD), 'r:c', '100');
    // A top-up of 10 takes the net past a multiple of the modulus.
    expect(await write('sync', 2n, before + 10n)).toBe('synced');
    expect(await redis.hget(names.lease, 'r:c')).toBe('110');
    // A recall gives back all 110 free; Postgres's net is then 110 lower: nothing moves.
    const recalled = await store.run('hotRecall', {
      keys: { lease: names.lease, claim: names.claim },
      args: { version: '3' },
    });
    expect(recalled.slice(2)).toEqual(['c', '110']);
    expect(await write('sync', 4n, before + 10n - 110n)).toBe('synced');
    expect(await redis.hget(names.lease, 'r:c')).toBe('0');
    expect(await write('sync', 5n, before + 10n - 110n + 2n ** 43n)).toBe('synced');
    expect(await redis.hget(names.lease, 'r:c')).toBe(String(2n ** 43n));
    await redis.del(names.lease);
  });
});
