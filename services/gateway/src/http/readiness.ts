import { connectRedis, type Logger, type RedisTarget } from '@tollgate/service-kit';

export type CheckStatus = 'ok' | 'failing';

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, CheckStatus>;
}

export interface Readiness {
  check(): Promise<ReadinessReport>;
  close(): Promise<void>;
}

/** A probe answers from this cache for a moment: load balancers probe often, checks cost I/O. */
const CACHE_MS = 1_000;

/**
 * Readiness of a gateway: it can serve metered calls only while the control plane's internal API
 * and (when configured) Redis answer. Liveness is separate and never depends on them, so an
 * outage of either takes gateways out of rotation without restarting them.
 */
export function createReadiness(options: {
  controlPlaneUrl: string;
  redisUrl: string | RedisTarget | undefined;
  timeoutMs?: number;
  logger: Logger;
}): Readiness {
  const timeoutMs = options.timeoutMs ?? 1_500;
  const redis = options.redisUrl
    ? connectRedis(options.redisUrl, {
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        connectTimeout: timeoutMs,
      })
    : null;
  // Failures show in the report; the connection's own retry events would only repeat them.
  redis?.on('error', () => {});
  let last: { at: number; report: Promise<ReadinessReport> } | null = null;

  async function controlPlane(): Promise<CheckStatus> {
    try {
      const response = await fetch(new URL('/internal/health', options.controlPlaneUrl), {
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel();
      return response.ok ? 'ok' : 'failing';
    } catch {
      return 'failing';
    }
  }

  async function redisCheck(): Promise<CheckStatus> {
    if (!redis) return 'ok';
    try {
      if (redis.status === 'wait' || redis.status === 'end') await redis.connect();
      const answer = await Promise.race([
        redis.ping(),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs).unref()),
      ]);
      return answer === 'PONG' ? 'ok' : 'failing';
    } catch {
      return 'failing';
    }
  }

  async function run(): Promise<ReadinessReport> {
    const [cp, rd] = await Promise.all([controlPlane(), redisCheck()]);
    const checks: Record<string, CheckStatus> = { controlPlane: cp };
    if (redis) checks.redis = rd;
    const ready = Object.values(checks).every((status) => status === 'ok');
    if (!ready) options.logger.warn({ checks }, 'gateway not ready');
    return { ready, checks };
  }

  return {
    check() {
      const now = Date.now();
      if (!last || now - last.at >= CACHE_MS) last = { at: now, report: run() };
      return last.report;
    },
    async close() {
      redis?.disconnect();
    },
  };
}
