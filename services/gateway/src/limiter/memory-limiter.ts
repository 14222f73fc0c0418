import {
  type Lease,
  type LimitDecision,
  type Limiter,
  type LimiterSettings,
  type LimitRequest,
  renewIntervalMs,
} from './limiter.ts';

/**
 * The same limits as the Redis limiter, for one gateway process (the embedded default). Leases
 * expire like Redis's and are renewed while held, so a slot whose release never comes (a call
 * that hung) frees itself after the lease TTL here too.
 */
export function createMemoryLimiter(settings: LimiterSettings, now: () => number = Date.now): Limiter {
  const counters = new Map<string, { window: number; count: number }>();
  /** Lease id -> expiry, per key or package. */
  const slots = new Map<string, Map<string, number>>();
  /** Leases held by calls still running, renewed until released. */
  const held = new Map<string, Array<Map<string, number>>>();

  function count(name: string, window: number): number {
    const counter = counters.get(name);
    return counter && counter.window === window ? counter.count : 0;
  }

  function bump(name: string, window: number): void {
    counters.set(name, { window, count: count(name, window) + 1 });
  }

  /** The live leases of a key or package (expired ones dropped). */
  function occupied(name: string, time: number): Map<string, number> {
    let set = slots.get(name);
    if (!set) {
      set = new Map();
      slots.set(name, set);
    }
    for (const [id, expiry] of set) if (expiry <= time) set.delete(id);
    return set;
  }

  const renew = setInterval(() => {
    const expiry = now() + settings.leaseTtlMs;
    for (const [id, sets] of held) for (const set of sets) if (set.has(id)) set.set(id, expiry);
  }, renewIntervalMs(settings.leaseTtlMs));
  renew.unref();

  const sweep = setInterval(() => {
    const window = Math.floor(now() / settings.windowMs);
    for (const [name, counter] of counters) if (counter.window !== window) counters.delete(name);
    for (const [name, set] of slots) if (set.size === 0) slots.delete(name);
  }, settings.windowMs);
  sweep.unref();

  return {
    kind: 'memory',
    shared: null,
    reachable: async () => true,
    async acquire(request: LimitRequest): Promise<LimitDecision> {
      const time = now();
      const window = Math.floor(time / settings.windowMs);
      const retryAfterSeconds = Math.max(
        1,
        Math.ceil((settings.windowMs - (time % settings.windowMs)) / 1000),
      );
      const resetSeconds = Math.ceil((settings.windowMs - (time % settings.windowMs)) / 1000);
      const plan = request.plan;
      const keyRate = `k:${request.keyId}`;
      const planRate = `p:${plan?.id}`;
      const refused = (limit: number): LimitDecision => ({
        allowed: false,
        code: 'rate_limit_exceeded',
        retryAfterSeconds,
        budget: { limit, remaining: 0, resetSeconds },
      });
      if (count(keyRate, window) >= request.keyRequestsPerMinute)
        return refused(request.keyRequestsPerMinute);
      if (plan?.requestsPerMinute && count(planRate, window) >= plan.requestsPerMinute) {
        return refused(plan.requestsPerMinute);
      }
      let lease: Lease | null = null;
      if (request.keyConcurrency !== null) {
        const keySlots = occupied(`k:${request.keyId}`, time);
        const planSlots = plan?.concurrency ? occupied(`p:${plan.id}`, time) : null;
        if (
          keySlots.size >= request.keyConcurrency ||
          (planSlots && plan?.concurrency && planSlots.size >= plan.concurrency)
        ) {
          return {
            allowed: false,
            code: 'concurrency_limit_exceeded',
            retryAfterSeconds: settings.concurrencyRetryAfterSeconds,
          };
        }
        const expiry = time + settings.leaseTtlMs;
        keySlots.set(request.leaseId, expiry);
        planSlots?.set(request.leaseId, expiry);
        held.set(request.leaseId, planSlots ? [keySlots, planSlots] : [keySlots]);
        lease = {
          async release() {
            held.delete(request.leaseId);
            keySlots.delete(request.leaseId);
            planSlots?.delete(request.leaseId);
          },
        };
      }
      bump(keyRate, window);
      let budget = {
        limit: request.keyRequestsPerMinute,
        remaining: request.keyRequestsPerMinute - count(keyRate, window),
        resetSeconds,
      };
      if (plan?.requestsPerMinute) {
        bump(planRate, window);
        const remaining = plan.requestsPerMinute - count(planRate, window);
        if (remaining < budget.remaining) budget = { limit: plan.requestsPerMinute, remaining, resetSeconds };
      }
      return { allowed: true, lease, budget };
    },
    async close() {
      clearInterval(sweep);
      clearInterval(renew);
    },
  };
}
