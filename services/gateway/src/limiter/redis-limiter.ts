import { AppError } from '@tollgate/errors';
import {
  connectRedis,
  LIMITS_LUA,
  type Logger,
  limiterKeys,
  limitRefusal,
  type RedisConnection,
  type RedisTarget,
  redisReady,
} from '@tollgate/service-kit';
import {
  type Lease,
  type LimitDecision,
  type Limiter,
  type LimiterSettings,
  type LimitRequest,
  renewIntervalMs,
} from './limiter.ts';

/**
 * All checks and all increments in one script (service-kit's LIMITS_LUA, the same rules the
 * control plane's hot tier applies), so a refused request changes nothing and several gateway
 * processes can never admit more than the ceiling.
 *
 * KEYS: 1 key-rate prefix, 2 plan-rate prefix, 3 key leases, 4 plan leases
 * ARGV: 1 key rpm, 2 plan rpm (0 = none), 3 window ms, 4 key concurrency (0 = no slot),
 *       5 plan concurrency (0 = none), 6 lease id, 7 lease ttl ms
 * Returns {0, limit, remaining, ms} allowed, {1, ms, limit} key rate, {2, ms, limit} plan rate,
 * {3} key concurrency, {4} plan concurrency (limit, remaining, ms: the request budget, see LIMITS_LUA).
 */
const ACQUIRE = `${LIMITS_LUA}
local l = {
  keyRate = KEYS[1], planRate = KEYS[2], keyLeases = KEYS[3], planLeases = KEYS[4],
  keyRpm = tonumber(ARGV[1]), planRpm = tonumber(ARGV[2]), window = tonumber(ARGV[3]),
  keySlots = tonumber(ARGV[4]), planSlots = tonumber(ARGV[5]),
}
local now = redisNowMs()
local rate = rateTake(l, now)
if rate then return {rate[1], rate[2], l.budget[1]} end
local full = slotsFree(l, now)
if full then
  rateGive(l, now)
  return full
end
slotTake(l, now, ARGV[6], tonumber(ARGV[7]))
return {0, l.budget[1], l.budget[2], l.budget[3]}
`;

/** How long a request waits for a (re)connecting Redis before it is refused. */
const CONNECT_WAIT_MS = 500;

/** Pushes the expiry of leases still held; returns nothing. KEYS: lease sets; ARGV: ttl, ids... */
const RENEW = `
local time = redis.call('TIME')
local expiry = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[i - 1], 'XX', expiry, ARGV[i])
  redis.call('PEXPIRE', KEYS[i - 1], tonumber(ARGV[1]))
end
return 0
`;

interface HeldLease {
  sets: string[];
  id: string;
  /** The hash tag its sets share: one renew script per tag keeps each script in one slot. */
  tag: string;
}

export function createRedisLimiter(
  redisUrl: string | RedisTarget,
  prefix: string,
  settings: LimiterSettings,
  logger: Logger,
): Limiter {
  const redis: RedisConnection = connectRedis(redisUrl, {
    // Fail at once while disconnected, and fast when Redis stalls: the request is refused.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 1_000,
    // Commands of all requests handled in one event-loop turn leave in one write. Not on a
    // cluster: ioredis would put scripts of different slots in one pipeline, which it refuses.
    enableAutoPipelining: !(typeof redisUrl === 'object' && redisUrl.cluster),
  });
  redis.on('error', (error) => logger.warn({ err: error }, 'limiter: redis error'));
  // EVALSHA with a fallback to EVAL; the key count is passed with each call.
  redis.defineCommand('tollgateAcquire', { lua: ACQUIRE });
  const scripts = redis as unknown as Record<
    'tollgateAcquire',
    (keyCount: number, ...args: Array<string | number>) => Promise<unknown>
  >;
  const connected = (ms: number) => redisReady(redis, ms);
  const held = new Map<string, HeldLease>();
  const renewTimer = setInterval(() => {
    if (held.size === 0) return;
    const byTag = new Map<string, Array<{ set: string; id: string }>>();
    for (const lease of held.values()) {
      const group = byTag.get(lease.tag) ?? [];
      for (const set of lease.sets) group.push({ set, id: lease.id });
      byTag.set(lease.tag, group);
    }
    for (const leases of byTag.values()) {
      redis
        .eval(
          RENEW,
          leases.length,
          ...leases.map((lease) => lease.set),
          settings.leaseTtlMs,
          ...leases.map((lease) => lease.id),
        )
        .catch((error: unknown) => logger.warn({ err: error }, 'limiter: could not renew leases'));
    }
  }, renewIntervalMs(settings.leaseTtlMs));
  renewTimer.unref();

  /** Keeps a taken slot renewed until its release, which frees it in Redis. */
  function hold(request: LimitRequest): Lease {
    const names = limiterKeys(prefix, request.keyId, request.plan?.id, request.accountId);
    const sets = request.plan?.concurrency ? [names.keyLeases, names.planLeases] : [names.keyLeases];
    held.set(request.leaseId, { sets, id: request.leaseId, tag: names.tag });
    return {
      async release() {
        if (!held.delete(request.leaseId)) return;
        // Written to Redis now, in this call, before the caller answers; not waited for. Anything
        // the client does after reading the answer reaches Redis after this (it is in Redis's socket
        // already), so its next call cannot find this one in flight; a reply would only add a round
        // trip to every answer. If Redis is away the lease expires by itself.
        const pipeline = redis.pipeline();
        for (const set of sets) pipeline.zrem(set, request.leaseId);
        pipeline.exec().catch((error: unknown) => {
          logger.warn({ err: error }, 'limiter: could not release a lease (it expires by itself)');
        });
      },
    };
  }

  return {
    kind: 'redis',
    shared: { prefix, windowMs: settings.windowMs, leaseTtlMs: settings.leaseTtlMs },
    reachable: () => connected(CONNECT_WAIT_MS),
    async acquire(request: LimitRequest): Promise<LimitDecision> {
      const plan = request.plan;
      const names = limiterKeys(prefix, request.keyId, plan?.id, request.accountId);
      const { keyLeases, planLeases } = names;
      if (redis.status !== 'ready' && !(await connected(CONNECT_WAIT_MS))) {
        throw new AppError('rate_limiter_unavailable');
      }
      let answer: [number, number?, number?, number?];
      try {
        answer = (await scripts.tollgateAcquire(
          4,
          names.keyRate,
          names.planRate,
          keyLeases,
          planLeases,
          request.keyRequestsPerMinute,
          plan?.requestsPerMinute ?? 0,
          settings.windowMs,
          request.keyConcurrency ?? 0,
          request.keyConcurrency === null ? 0 : (plan?.concurrency ?? 0),
          request.leaseId,
          settings.leaseTtlMs,
        )) as typeof answer;
      } catch (error) {
        throw new AppError('rate_limiter_unavailable', { cause: error });
      }
      const [verdict, first = 1000, second = 0, third = 0] = answer;
      if (verdict !== 0) {
        // Refused: {1|2, retry ms, limit} for a rate, {3|4} for concurrency.
        const refusal = limitRefusal(verdict, first, settings.concurrencyRetryAfterSeconds);
        if (refusal.code === 'concurrency_limit_exceeded') return { allowed: false, ...refusal };
        const budget = { limit: second, remaining: 0, resetSeconds: Math.ceil(first / 1000) };
        return { allowed: false, ...refusal, budget };
      }
      // Admitted: {0, limit, remaining, ms to the window's end}.
      return {
        allowed: true,
        lease: request.keyConcurrency === null ? null : hold(request),
        budget: { limit: first, remaining: second, resetSeconds: Math.ceil(third / 1000) },
      };
    },
    async close() {
      clearInterval(renewTimer);
      redis.disconnect();
    },
  };
}
