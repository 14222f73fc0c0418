import { randomUUID } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import { createLogger } from '@tollgate/service-kit';
import { createRedisNamespace } from '@tollgate/test-harness';
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { Limiter, LimiterSettings, LimitRequest } from './limiter.ts';
import { createMemoryLimiter } from './memory-limiter.ts';
import { createRedisLimiter } from './redis-limiter.ts';

const logger = createLogger({ name: 'limiter-test', level: 'silent' });
const settings: LimiterSettings = {
  windowMs: 3_600_000,
  leaseTtlMs: 60_000,
  concurrencyRetryAfterSeconds: 1,
};
const opened: Limiter[] = [];
afterEach(async () => {
  for (const limiter of opened.splice(0)) await limiter.close();
});

function request(keyId: string, overrides: Partial<LimitRequest> = {}): LimitRequest {
  return {
    keyId,
    keyRequestsPerMinute: 1000,
    keyConcurrency: 100,
    plan: null,
    leaseId: randomUUID(),
    ...overrides,
  };
}

/**
 * One round trip on the limiter's own Redis connection. A release is written, not awaited; Redis
 * applies one connection's commands in order, so once this returns the release is applied. A
 * client's next call reaches Redis later still (through a gateway and the control plane); a bare
 * acquire on another connection right away could overtake it.
 */
async function roundTrip(limiter: Limiter): Promise<void> {
  const decision = await limiter.acquire(request(randomUUID()));
  if (decision.allowed) await decision.lease?.release();
}

function redisLimiters(count: number, options: Partial<LimiterSettings> = {}): Limiter[] {
  const prefix = createRedisNamespace('limiter');
  const { redisUrl } = inject('testServices');
  const limiters = Array.from({ length: count }, () =>
    createRedisLimiter(redisUrl, prefix, { ...settings, ...options }, logger),
  );
  opened.push(...limiters);
  return limiters;
}

describe.each([
  ['redis', () => redisLimiters(1)[0]!],
  ['memory', () => createMemoryLimiter(settings)],
])('%s limiter', (_name, create) => {
  it('admits the per-key ceiling, then refuses with a Retry-After', async () => {
    const limiter = create();
    const keyId = randomUUID();
    const decisions = [];
    for (let index = 0; index < 6; index += 1) {
      decisions.push(
        await limiter.acquire(request(keyId, { keyRequestsPerMinute: 5, keyConcurrency: null })),
      );
    }
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(5);
    expect(decisions[5]).toMatchObject({ allowed: false, code: 'rate_limit_exceeded' });
    const refused = decisions[5] as { retryAfterSeconds: number };
    expect(refused.retryAfterSeconds).toBeGreaterThan(0);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(3600);
  });

  it('tells the budget left after each call, the tighter of the key and the package, and the exhausted one on refusal', async () => {
    const limiter = create();
    const keyId = randomUUID();
    // As the gateway sends it: with the account, whose hash tag the key's counters live under.
    const accountId = randomUUID();
    const plan = { id: randomUUID(), requestsPerMinute: 3, concurrency: null };
    const asKey = (rpm: number, withPlan = false) =>
      limiter.acquire(
        request(keyId, {
          accountId,
          keyRequestsPerMinute: rpm,
          keyConcurrency: null,
          plan: withPlan ? plan : null,
        }),
      );
    const first = await asKey(5);
    expect(first).toMatchObject({ allowed: true, budget: { limit: 5, remaining: 4 } });
    const reset = (first as { budget: { resetSeconds: number } }).budget.resetSeconds;
    expect(reset).toBeGreaterThan(0);
    expect(reset).toBeLessThanOrEqual(3600);
    // Key 5 with 3 left after this call, package 3 with 2 left: the package's is the tighter.
    expect(await asKey(5, true)).toMatchObject({ allowed: true, budget: { limit: 3, remaining: 2 } });
    expect(await asKey(5, true)).toMatchObject({ allowed: true, budget: { limit: 3, remaining: 1 } });
    expect(await asKey(5, true)).toMatchObject({ allowed: true, budget: { limit: 3, remaining: 0 } });
    expect(await asKey(5, true)).toMatchObject({
      allowed: false,
      code: 'rate_limit_exceeded',
      budget: { limit: 3, remaining: 0 },
    });
    // Without the package the key has one call left of its own five.
    expect(await asKey(5)).toMatchObject({ allowed: true, budget: { limit: 5, remaining: 0 } });
    expect(await asKey(5)).toMatchObject({ allowed: false, budget: { limit: 5, remaining: 0 } });
  });

  it('holds concurrency slots until released, and a refusal consumes no rate', async () => {
    const limiter = create();
    const keyId = randomUUID();
    const first = await limiter.acquire(request(keyId, { keyConcurrency: 2, keyRequestsPerMinute: 3 }));
    const second = await limiter.acquire(request(keyId, { keyConcurrency: 2, keyRequestsPerMinute: 3 }));
    const third = await limiter.acquire(request(keyId, { keyConcurrency: 2, keyRequestsPerMinute: 3 }));
    expect(third).toEqual({ allowed: false, code: 'concurrency_limit_exceeded', retryAfterSeconds: 1 });
    if (!first.allowed) throw new Error('first refused');
    await first.lease?.release();
    const fourth = await limiter.acquire(request(keyId, { keyConcurrency: 2, keyRequestsPerMinute: 3 }));
    expect(fourth.allowed).toBe(true);
    expect(second.allowed).toBe(true);
    // Three admitted in all: the refused one did not count against the rate.
    const fifth = await limiter.acquire(request(keyId, { keyConcurrency: null, keyRequestsPerMinute: 3 }));
    expect(fifth).toMatchObject({ allowed: false, code: 'rate_limit_exceeded' });
  });

  it('applies the package ceilings across keys of the same plan', async () => {
    const limiter = create();
    const plan = { id: randomUUID(), requestsPerMinute: 3, concurrency: 1 };
    const a = await limiter.acquire(request(randomUUID(), { plan }));
    const b = await limiter.acquire(request(randomUUID(), { plan }));
    expect(a.allowed).toBe(true);
    expect(b).toMatchObject({ allowed: false, code: 'concurrency_limit_exceeded' });
    const c = await limiter.acquire(request(randomUUID(), { plan, keyConcurrency: null }));
    const d = await limiter.acquire(request(randomUUID(), { plan, keyConcurrency: null }));
    expect(c.allowed).toBe(true);
    expect(d.allowed).toBe(true);
    expect(await limiter.acquire(request(randomUUID(), { plan, keyConcurrency: null }))).toMatchObject({
      code: 'rate_limit_exceeded',
    });
  });
});

describe.each([
  ['redis', (ttl: number) => redisLimiters(1, { leaseTtlMs: ttl })[0]!],
  ['memory', (ttl: number) => createMemoryLimiter({ ...settings, leaseTtlMs: ttl })],
])('%s limiter leases', (_name, create) => {
  it('keeps the slot of a call still running for many lease lifetimes (renewed while held)', async () => {
    const limiter = create(300);
    opened.push(limiter);
    const keyId = randomUUID();
    const running = await limiter.acquire(request(keyId, { keyConcurrency: 1 }));
    expect(running.allowed).toBe(true);
    // Real time: four lease lifetimes pass while the call holds its slot.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(await limiter.acquire(request(keyId, { keyConcurrency: 1 }))).toMatchObject({
      allowed: false,
      code: 'concurrency_limit_exceeded',
    });
    if (running.allowed) await running.lease?.release();
    expect((await limiter.acquire(request(keyId, { keyConcurrency: 1 }))).allowed).toBe(true);
  });

  it('frees a slot within the lease lifetime once its holder stops renewing', async () => {
    const limiter = create(300);
    const keyId = randomUUID();
    expect((await limiter.acquire(request(keyId, { keyConcurrency: 1 }))).allowed).toBe(true);
    await limiter.close(); // the holder is gone: no release, no renewal
    // Real time: the lease (300 ms) runs out unrenewed.
    await new Promise((resolve) => setTimeout(resolve, 400));
    const other = create(300);
    opened.push(other);
    // The memory limiter's state lives in the closed instance; Redis's is shared.
    const next = _name === 'memory' ? limiter : other;
    expect((await next.acquire(request(keyId, { keyConcurrency: 1 }))).allowed).toBe(true);
  });
});

describe('redis limiter across gateway processes', () => {
  it('admits R per window in total from two limiters, not 2R', async () => {
    const [one, two] = redisLimiters(2);
    const keyId = randomUUID();
    const decisions = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        (index % 2 === 0 ? one! : two!).acquire(
          request(keyId, { keyRequestsPerMinute: 15, keyConcurrency: null }),
        ),
      ),
    );
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(15);
  });

  it('shares concurrency slots, and a release in one frees a slot for the other', async () => {
    const [one, two] = redisLimiters(2);
    const keyId = randomUUID();
    const held = await one!.acquire(request(keyId, { keyConcurrency: 1 }));
    expect(await two!.acquire(request(keyId, { keyConcurrency: 1 }))).toMatchObject({ allowed: false });
    if (!held.allowed) throw new Error('refused');
    await held.lease?.release();
    await roundTrip(one!);
    expect(await two!.acquire(request(keyId, { keyConcurrency: 1 }))).toMatchObject({ allowed: true });
  });

  it('never counts a finished call as in flight, whichever gateway the next call takes', async () => {
    const limiters = redisLimiters(2);
    const keyId = randomUUID();
    let refused = 0;
    for (let index = 0; index < 400; index += 1) {
      const limiter = limiters[index % 2]!;
      const decision = await limiter.acquire(request(keyId, { keyConcurrency: 1 }));
      if (!decision.allowed) refused += 1;
      else await decision.lease?.release();
      await roundTrip(limiter);
    }
    expect(refused).toBe(0);
  });

  it('frees the slot of a gateway that died once the lease expires', async () => {
    const [dead, alive] = redisLimiters(2, { leaseTtlMs: 300 });
    const keyId = randomUUID();
    expect((await dead!.acquire(request(keyId, { keyConcurrency: 1 }))).allowed).toBe(true);
    await dead!.close(); // never releases
    expect(await alive!.acquire(request(keyId, { keyConcurrency: 1 }))).toMatchObject({ allowed: false });
    // Real time: the dead gateway's lease (300 ms) runs out.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await alive!.acquire(request(keyId, { keyConcurrency: 1 }))).allowed).toBe(true);
  });

  it('refuses with rate_limiter_unavailable when Redis cannot be reached', async () => {
    const limiter = createRedisLimiter('redis://127.0.0.1:1', 'x:', settings, logger);
    opened.push(limiter);
    const error = await limiter.acquire(request(randomUUID())).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('rate_limiter_unavailable');
  });
});
