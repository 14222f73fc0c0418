import { createLogger } from '@tollgate/service-kit';
import { createRedisNamespace } from '@tollgate/test-harness';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { type BreakerSettings, type BreakerStore, createMemoryBreakerStore } from './breaker-store.ts';
import { type Breakers, createBreakers } from './breakers.ts';
import { createRedisBreakerStore } from './redis-breaker-store.ts';

const logger = createLogger({ name: 'breakers-test', level: 'silent' });
const settings: BreakerSettings = {
  failures: 3,
  errorPercent: 50,
  windowMs: 10_000,
  minCalls: 6,
  openMs: 300,
  maxOpenMs: 1_000,
  maxRetryAfterMs: 60_000,
  probeTimeoutMs: 5_000,
};
const main = { providerId: 'p', upstreamModel: 'main' };
const key = 'p\u0000main';
const failure = { successes: 0, probe: false, retryAfterMs: undefined, cause: 'upstream_unavailable (500)' };

const stores: BreakerStore[] = [];
const breakers: Breakers[] = [];
afterEach(async () => {
  await Promise.all(breakers.splice(0).map((each) => each.close()));
  await Promise.all(stores.splice(0).map((store) => store.close_()));
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for a published change to reach a gateway (pub/sub has no signal a test can await). */
async function until(check: () => boolean): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > 5_000) throw new Error('never happened');
    // Polls a condition the breaker announces no event for, bounded above.
    await sleep(5);
  }
}

describe.each([
  ['memory', () => createMemoryBreakerStore(settings)],
  [
    'redis',
    () => {
      const prefix = createRedisNamespace('breakers');
      return createRedisBreakerStore(inject('testServices').redisUrl, prefix, settings, logger);
    },
  ],
] as const)('%s breaker store', (_name, make) => {
  const store = () => {
    const made = make();
    stores.push(made);
    return made;
  };

  it('opens after the failures in a row, not before; a success in between starts the count again', async () => {
    const breaker = store();
    expect(await breaker.failed(key, failure)).toBeNull();
    expect(await breaker.failed(key, failure)).toBeNull();
    await breaker.succeeded(new Map([[key, 1]]));
    expect(await breaker.failed(key, failure)).toBeNull();
    expect(await breaker.failed(key, failure)).toBeNull();
    const opened = await breaker.failed(key, failure);
    expect(opened).toMatchObject({
      key,
      to: 'open',
      state: { state: 'open', reason: 'consecutive_failures' },
    });
    expect(opened?.state?.openForMs).toBeGreaterThan(250);
    expect((await breaker.snapshot()).get(key)?.cause).toBe('upstream_unavailable (500)');
  });

  it('opens on the error rate of the window once enough calls were made', async () => {
    const breaker = store();
    // Alternating: never three failures in a row, but half of the calls fail.
    expect(await breaker.failed(key, { ...failure, successes: 1 })).toBeNull();
    expect(await breaker.failed(key, { ...failure, successes: 1 })).toBeNull();
    const opened = await breaker.failed(key, { ...failure, successes: 1 });
    expect(opened?.state).toMatchObject({ reason: 'error_rate', failures: 3, calls: 6 });
  });

  it('lets one probe through once the cool-down ended; a failed probe doubles it, a success closes', async () => {
    const breaker = store();
    for (let n = 0; n < 3; n++) await breaker.failed(key, failure);
    expect(await breaker.claimProbe(key)).toBe(false);
    // Real time: the breaker's cool-down (300 ms here) is a span of time, not an event.
    await sleep(320);
    const claims = await Promise.all([
      breaker.claimProbe(key),
      breaker.claimProbe(key),
      breaker.claimProbe(key),
    ]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    const reopened = await breaker.failed(key, { ...failure, probe: true });
    expect(reopened).toMatchObject({ to: 'reopened', state: { reason: 'probe_failed', trips: 2 } });
    expect(reopened?.state?.openForMs).toBeGreaterThan(550);
    // Real time: the doubled cool-down (600 ms) has to pass.
    await sleep(620);
    expect(await breaker.claimProbe(key)).toBe(true);
    expect(await breaker.close(key)).toEqual({ key, to: 'closed', state: null });
    expect((await breaker.snapshot()).size).toBe(0);
    // Closed with a clean count: it takes the full number of failures to open again.
    expect(await breaker.failed(key, failure)).toBeNull();
  });

  it("benches for the provider's Retry-After, up to the maximum", async () => {
    const breaker = store();
    const benched = await breaker.failed(key, { ...failure, retryAfterMs: 2_000 });
    expect(benched).toMatchObject({ to: 'benched', state: { state: 'closed' } });
    expect(benched?.state?.benchedForMs).toBeGreaterThan(1_900);
    expect(benched?.state?.benchedForMs).toBeLessThanOrEqual(2_000);
    const capped = await breaker.failed('other', { ...failure, retryAfterMs: 3_600_000 });
    expect(capped?.state?.benchedForMs).toBeLessThanOrEqual(60_000);
  });
});

describe('breakers shared through Redis', () => {
  function gateway(prefix: string) {
    const store = createRedisBreakerStore(inject('testServices').redisUrl, prefix, settings, logger);
    const made = createBreakers({ store, logger });
    breakers.push(made);
    return made;
  }

  it('an upstream one gateway opened is out for the others at once, with no call of theirs asking Redis', async () => {
    const prefix = createRedisNamespace('breakers-shared');
    const [a, b, c] = [gateway(prefix), gateway(prefix), gateway(prefix)];
    await Promise.all([a.ready, b.ready, c.ready]);
    expect(b.standing(main)).toBeNull();
    for (let n = 0; n < 3; n++)
      a.failed(main, { retryAfterMs: undefined, cause: 'upstream_unavailable (500)' });
    await until(() => b.standing(main)?.kind === 'out' && c.standing(main)?.kind === 'out');
    // A call sent before it opened that answers after: the breaker stays open.
    b.succeeded(main);
    await b.flush();
    expect((await c.list()).get(key)?.state).toBe('open');

    // Once the cool-down ends, exactly one gateway gets the probe.
    await sleep(320);
    // Two calls on each gateway at once.
    const claims = await Promise.all(
      [a, b, c, a, b, c].map(async (each) => ({ each, probes: await each.claimProbes([main]) })),
    );
    const probing = claims.filter((claim) => claim.probes?.has(key));
    expect(probing).toHaveLength(1);
    expect([a, b, c].every((each) => each.standing(main)?.kind === 'out')).toBe(true);
    probing[0]!.each.succeeded(main);
    await until(() => [a, b, c].every((each) => each.standing(main) === null));
  });

  it('a Retry-After benches the upstream on every gateway for that long, no sooner', async () => {
    const prefix = createRedisNamespace('breakers-bench');
    const [a, b] = [gateway(prefix), gateway(prefix)];
    await Promise.all([a.ready, b.ready]);
    const started = Date.now();
    a.failed(main, { retryAfterMs: 1_000, cause: 'upstream_unavailable (429)' });
    await until(() => b.standing(main)?.kind === 'out');
    await until(() => b.standing(main) === null);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });
});

describe('the cost of a healthy call', () => {
  it('asks the store nothing per call: successes leave once a second, one batch for all upstreams', async () => {
    const store = createMemoryBreakerStore(settings);
    const asked: string[] = [];
    const asking =
      <A extends unknown[], R>(name: string, method: (...args: A) => R) =>
      (...args: A): R => {
        asked.push(name);
        return method(...args);
      };
    const counting: BreakerStore = {
      ...store,
      failed: asking('failed', store.failed),
      succeeded: asking('succeeded', store.succeeded),
      claimProbe: asking('claimProbe', store.claimProbe),
      close: asking('close', store.close),
      snapshot: asking('snapshot', store.snapshot),
    };
    const made = createBreakers({ store: counting, logger });
    breakers.push(made);
    await made.ready;
    asked.length = 0;
    const other = { providerId: 'p', upstreamModel: 'other' };
    for (let call = 0; call < 1_000; call++) {
      expect(made.claimProbes([main, other])).toBeNull();
      expect(made.standing(main)).toBeNull();
      made.succeeded(call % 2 ? main : other);
    }
    expect(asked).toEqual([]);
    await made.flush();
    expect(asked).toEqual(['succeeded']);
  });
});
