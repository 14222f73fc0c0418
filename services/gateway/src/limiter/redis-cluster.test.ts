import { randomUUID } from 'node:crypto';
import { INVALIDATION_CHANNEL } from '@tollgate/schemas';
import { connectRedis, createLogger, type RedisTarget } from '@tollgate/service-kit';
import {
  createRedisNamespace,
  type LocalRedisCluster,
  startRedisCluster,
  waitFor,
} from '@tollgate/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subscribeToInvalidations } from '../events/invalidation-subscriber.ts';
import type { Limiter, LimiterSettings, LimitRequest } from './limiter.ts';
import { createRedisLimiter } from './redis-limiter.ts';

// A three-node Redis Cluster from Debian's redis-server on free local ports, for this file only.
const logger = createLogger({ name: 'cluster-test', level: 'silent' });
const settings: LimiterSettings = {
  windowMs: 3_600_000,
  leaseTtlMs: 60_000,
  concurrencyRetryAfterSeconds: 1,
};
const opened: Array<{ close(): Promise<void> }> = [];
let cluster: LocalRedisCluster;
let target: RedisTarget;

beforeAll(async () => {
  cluster = await startRedisCluster();
  target = { url: cluster.url, cluster: true };
}, 60_000);

afterAll(async () => {
  for (const item of opened.splice(0)) await item.close();
  await cluster?.stop();
});

function limiters(count: number, options: Partial<LimiterSettings> = {}): Limiter[] {
  const prefix = createRedisNamespace('cluster');
  const made = Array.from({ length: count }, () =>
    createRedisLimiter(target, prefix, { ...settings, ...options }, logger),
  );
  opened.push(...made);
  return made;
}

/** Accounts of the keys below (keys of one account share a hash slot). */
const accountOf = new Map<string, string>();

/**
 * One round trip on the limiter's own connection to the node of 'acct-default'. A release is
 * written, not awaited, and a node applies one connection's commands in order, so once this returns
 * the limiter's releases there are applied; a bare acquire through another limiter could overtake
 * them (a client's next call, through a gateway, reaches Redis later still).
 */
async function roundTrip(limiter: Limiter): Promise<void> {
  const decision = await limiter.acquire(request(randomUUID()));
  if (decision.allowed) await decision.lease?.release();
}

function request(keyId: string, overrides: Partial<LimitRequest> = {}): LimitRequest {
  return {
    keyId,
    accountId: accountOf.get(keyId) ?? 'acct-default',
    keyRequestsPerMinute: 1000,
    keyConcurrency: 100,
    plan: null,
    leaseId: randomUUID(),
    ...overrides,
  };
}

describe('redis limiter on a three-node Redis Cluster', () => {
  it('admits R per window in total from two limiters, for keys spread over every node', async () => {
    const [a, b] = limiters(2);
    // Twelve keys of twelve accounts: their hash slots fall on all three nodes.
    for (let key = 0; key < 12; key += 1) {
      const keyId = randomUUID();
      accountOf.set(keyId, randomUUID());
      const decisions = await Promise.all(
        Array.from({ length: 8 }, (_, index) =>
          (index % 2 ? a! : b!).acquire(request(keyId, { keyRequestsPerMinute: 5, keyConcurrency: null })),
        ),
      );
      expect(decisions.filter((decision) => decision.allowed)).toHaveLength(5);
    }
  });

  it('serves calls of accounts on different nodes made in the same moment', async () => {
    const [a] = limiters(1);
    const keyIds = Array.from({ length: 12 }, () => {
      const keyId = randomUUID();
      accountOf.set(keyId, randomUUID());
      return keyId;
    });
    const decisions = await Promise.all(keyIds.map((keyId) => a!.acquire(request(keyId))));
    expect(decisions.every((decision) => decision.allowed)).toBe(true);
    // Their releases, in the same moment too, all land: the slots are free again.
    await Promise.all(decisions.map((decision) => (decision.allowed ? decision.lease?.release() : null)));
    const again = await Promise.all(keyIds.map((keyId) => a!.acquire(request(keyId, { keyConcurrency: 1 }))));
    expect(again.every((decision) => decision.allowed)).toBe(true);
  });

  it('counts a key once whichever package its calls draw from', async () => {
    const [a, b] = limiters(2);
    const keyId = randomUUID();
    accountOf.set(keyId, randomUUID());
    const plan = { id: `${accountOf.get(keyId)}:pkg`, requestsPerMinute: 100, concurrency: null };
    const decisions = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        (index % 2 ? a! : b!).acquire(
          request(keyId, { keyRequestsPerMinute: 5, keyConcurrency: null, plan: index % 3 ? plan : null }),
        ),
      ),
    );
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(5);
  });

  it('applies package ceilings across keys of the same package, atomically with the key checks', async () => {
    const [a, b] = limiters(2);
    const plan = { id: 'acct-default:pkg', requestsPerMinute: 4, concurrency: 2 };
    const first = await a!.acquire(request(randomUUID(), { plan }));
    const second = await b!.acquire(request(randomUUID(), { plan }));
    expect([first.allowed, second.allowed]).toEqual([true, true]);
    expect(await a!.acquire(request(randomUUID(), { plan }))).toMatchObject({
      allowed: false,
      code: 'concurrency_limit_exceeded',
    });
    if (first.allowed) await first.lease?.release();
    await roundTrip(a!);
    const third = await b!.acquire(request(randomUUID(), { plan }));
    expect(third.allowed).toBe(true);
    if (second.allowed) await second.lease?.release();
    if (third.allowed) await third.lease?.release();
    await roundTrip(b!);
    // Three admitted of four per window; one more, then the package's rate is spent.
    expect((await a!.acquire(request(randomUUID(), { plan }))).allowed).toBe(true);
    expect(await b!.acquire(request(randomUUID(), { plan }))).toMatchObject({
      allowed: false,
      code: 'rate_limit_exceeded',
    });
  });

  it('renews held leases, and frees the slot of a limiter that died once its lease expires', async () => {
    const [survivor, victim] = limiters(2, { leaseTtlMs: 1_500 });
    const keyId = randomUUID();
    const held = await victim!.acquire(request(keyId, { keyConcurrency: 1 }));
    expect(held.allowed).toBe(true);
    // Real time: renewal keeps it past its first TTL.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await survivor!.acquire(request(keyId, { keyConcurrency: 1 }))).toMatchObject({ allowed: false });
    await victim!.close();
    // Real time: the dead limiter's lease (1.5 s) runs out.
    await new Promise((resolve) => setTimeout(resolve, 1_800));
    expect((await survivor!.acquire(request(keyId, { keyConcurrency: 1 }))).allowed).toBe(true);
  });

  it('delivers invalidation events through the cluster', async () => {
    const prefix = createRedisNamespace('cluster-events');
    const received: string[] = [];
    const subscription = subscribeToInvalidations(
      target,
      prefix,
      {
        keyChanged: (keyId) => received.push(keyId),
        accountChanged: () => {},
        catalogChanged: () => {},
        resync: () => {},
      },
      logger,
    );
    opened.push(subscription);
    const publisher = connectRedis(target);
    opened.push({ close: async () => publisher.disconnect() });
    const keyId = randomUUID();
    await waitFor(async () => {
      await publisher.publish(
        `${prefix}${INVALIDATION_CHANNEL}`,
        JSON.stringify({ type: 'key.changed', keyId }),
      );
      return received.includes(keyId);
    }, 'the event');
  });
});
