import { type LocalRedisCluster, startRedisCluster } from '@tollgate/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  balancesOf,
  createFundedKey,
  expectLedgerConsistent,
  internalApi,
  reserveItem,
  seedCatalog,
  settleItem,
} from '../../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../../test/context.ts';

/**
 * The hot tier on a Redis Cluster: every script touches one account's keys (one hash tag), so
 * batches that mix accounts on different nodes are split per account and each runs atomically.
 */
let cluster: LocalRedisCluster;
let context: TestContext;
let api: ReturnType<typeof internalApi>;

beforeAll(async () => {
  cluster = await startRedisCluster();
  context = await createTestContext('hot-cluster', { REDIS_URL: cluster.url, REDIS_CLUSTER: 'true' });
  await seedCatalog(context);
  api = internalApi(context);
}, 90_000);
afterAll(async () => {
  await context?.close();
  await cluster?.stop();
});

describe('the hot tier on a Redis Cluster', () => {
  it('reserves, limits and settles batches that mix accounts on different nodes, exactly', async () => {
    expect(context.deps.billing.kind).toBe('hot');
    const keys = await Promise.all(
      Array.from({ length: 6 }, () => createFundedKey(context, { credits: 1_000n })),
    );
    const limiter = { prefix: `${context.redisPrefix}gw:`, windowMs: 3_600_000, leaseTtlMs: 60_000 };
    // Each account: 10 calls of 70 credits at most 14 fit in 1,000; its key allows 8 per window.
    const items = keys.flatMap((key) =>
      Array.from({ length: 10 }, () => ({
        ...reserveItem(key, 'priced', 10n, 10n),
        limits: { keyRequestsPerMinute: 8, keyConcurrency: 100, plan: null },
      })),
    );
    const reserved = await Promise.all(
      [0, 1].map((half) =>
        api.reserve(
          items.filter((_, index) => index % 2 === half),
          limiter,
        ),
      ),
    );
    const results = reserved.flatMap((answer) => answer.body.results);
    for (const key of keys) {
      const mine = results.filter(
        (result) =>
          items.find((item) => item.reservationId === result.reservationId)!.accountId === key.accountId,
      );
      expect(mine.filter((result) => result.ok)).toHaveLength(8);
      expect(mine.filter((result) => !result.ok && result.code === 'rate_limit_exceeded')).toHaveLength(2);
    }
    await api.finish(
      results.flatMap((result) => {
        if (!result.ok) return [];
        const key = keys.find((one) => one.accountId === result.accountId)!;
        return [settleItem(key, result.reservationId, 'priced', 5n, 5n)];
      }),
    );
    for (const key of keys) {
      expect(await balancesOf(context, key.accountId)).toMatchObject({
        credits: 1_000n - 8n * 35n,
        reservedCredits: 0n,
      });
    }
    await expectLedgerConsistent(context);
  });
});
