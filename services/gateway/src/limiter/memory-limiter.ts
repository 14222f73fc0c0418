import type { Lease, LimitDecision, Limiter, LimiterSettings, LimitRequest } from './limiter.ts';

/** The same limits as the Redis limiter, for one gateway process (the embedded default). */
export function createMemoryLimiter(settings: LimiterSettings, now: () => number = Date.now): Limiter {
  const counters = new Map<string, { window: number; count: number }>();
  const slots = new Map<string, Set<string>>();

  function count(name: string, window: number): number {
    const counter = counters.get(name);
    return counter && counter.window === window ? counter.count : 0;
  }

  function bump(name: string, window: number): void {
    counters.set(name, { window, count: count(name, window) + 1 });
  }

  function occupied(name: string): Set<string> {
    let set = slots.get(name);
    if (!set) {
      set = new Set();
      slots.set(name, set);
    }
    return set;
  }

  const sweep = setInterval(() => {
    const window = Math.floor(now() / settings.windowMs);
    for (const [name, counter] of counters) if (counter.window !== window) counters.delete(name);
    for (const [name, set] of slots) if (set.size === 0) slots.delete(name);
  }, settings.windowMs);
  sweep.unref();

  return {
    kind: 'memory',
    async acquire(request: LimitRequest): Promise<LimitDecision> {
      const time = now();
      const window = Math.floor(time / settings.windowMs);
      const retryAfterSeconds = Math.max(
        1,
        Math.ceil((settings.windowMs - (time % settings.windowMs)) / 1000),
      );
      const plan = request.plan;
      const keyRate = `k:${request.keyId}`;
      const planRate = `p:${plan?.id}`;
      if (count(keyRate, window) >= request.keyRequestsPerMinute) {
        return { allowed: false, code: 'rate_limit_exceeded', retryAfterSeconds };
      }
      if (plan?.requestsPerMinute && count(planRate, window) >= plan.requestsPerMinute) {
        return { allowed: false, code: 'rate_limit_exceeded', retryAfterSeconds };
      }
      let lease: Lease | null = null;
      if (request.keyConcurrency !== null) {
        const keySlots = occupied(`k:${request.keyId}`);
        const planSlots = plan?.concurrency ? occupied(`p:${plan.id}`) : null;
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
        keySlots.add(request.leaseId);
        planSlots?.add(request.leaseId);
        lease = {
          async release() {
            keySlots.delete(request.leaseId);
            planSlots?.delete(request.leaseId);
          },
        };
      }
      bump(keyRate, window);
      if (plan?.requestsPerMinute) bump(planRate, window);
      return { allowed: true, lease };
    },
    async close() {
      clearInterval(sweep);
    },
  };
}
