import type { FinishItem, GatewayHeartbeat, UpstreamBreakerReport } from '@tollgate/schemas';
import type { Logger } from '@tollgate/service-kit';
import { Redis } from 'ioredis';
import type { CredentialRefusal } from '../routing/credential-pool.ts';

/** The provider answered: its own refusal or an answer without usage still proves it is up. */
const ANSWERED = new Set(['ok', 'upstream_rejected', 'billing_settlement_pending']);
/** The provider failed the call: unreachable, timed out, 5xx, or a body we could not read. */
const FAILED = new Set(['upstream_unavailable', 'upstream_invalid_response']);

const REDIS_PING_TIMEOUT_MS = 1_000;

export interface HeartbeatOptions {
  send(beat: GatewayHeartbeat): Promise<unknown>;
  /** Which provider serves an alias (from the catalogue cache); undefined when unknown. */
  providerOf(alias: string): string | undefined;
  /** Credentials out of rotation because their provider refused them, reported with each beat. */
  refusedCredentials?: () => CredentialRefusal[];
  /** Upstreams whose breaker is open or that a provider benched, reported with each beat. */
  upstreamBreakers?: () => UpstreamBreakerReport[];
  intervalMs: number;
  redisUrl: string | undefined;
  logger: Logger;
}

/**
 * Tells the control plane, every interval, that this gateway is alive, whether it reaches Redis,
 * and how each provider's calls ended since the last beat, so the status page never reports
 * "operational" for a gateway that is gone or a provider that fails every call. Counts that could
 * not be delivered are kept and sent with the next beat.
 */
export function createHeartbeat(options: HeartbeatOptions) {
  const gatewayId = crypto.randomUUID();
  const startedAt = new Date().toISOString();
  let counts = new Map<string, { successes: number; failures: number }>();
  let timer: NodeJS.Timeout | null = null;
  let warned = false;
  // Its own connection: a ping must not queue behind the limiter's scripts, and never blocks them.
  const redis = options.redisUrl
    ? new Redis(options.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false })
    : null;
  redis?.on('error', () => {});

  async function redisState(): Promise<GatewayHeartbeat['redis']> {
    if (!redis) return 'not_configured';
    try {
      if (redis.status === 'wait') await redis.connect();
      const pong = await Promise.race([
        redis.ping(),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), REDIS_PING_TIMEOUT_MS).unref()),
      ]);
      return pong === 'PONG' ? 'ok' : 'failing';
    } catch {
      return 'failing';
    }
  }

  async function beat(): Promise<void> {
    const sending = counts;
    counts = new Map();
    const providers = [...sending].map(([providerId, count]) => ({ providerId, ...count }));
    try {
      await options.send({
        gatewayId,
        startedAt,
        redis: await redisState(),
        providers,
        refusedCredentials: options.refusedCredentials?.() ?? [],
        upstreamBreakers: options.upstreamBreakers?.() ?? [],
      });
      warned = false;
    } catch (error) {
      for (const [providerId, count] of sending) {
        const kept = counts.get(providerId) ?? { successes: 0, failures: 0 };
        counts.set(providerId, {
          successes: kept.successes + count.successes,
          failures: kept.failures + count.failures,
        });
      }
      if (!warned) options.logger.warn({ err: error }, 'status heartbeat not delivered; will retry');
      warned = true;
    }
  }

  return {
    gatewayId,
    /** Counts the upstream outcome of a finished reservation (called beside the billing queue). */
    record(item: FinishItem): void {
      const answered = ANSWERED.has(item.outcome);
      if (!answered && !FAILED.has(item.outcome)) return;
      const providerId = options.providerOf(item.alias);
      if (!providerId) return;
      const count = counts.get(providerId) ?? { successes: 0, failures: 0 };
      if (answered) count.successes += 1;
      else count.failures += 1;
      counts.set(providerId, count);
    },
    beat,
    start(): void {
      void beat();
      timer = setInterval(() => void beat(), options.intervalMs);
      timer.unref();
    },
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      redis?.disconnect();
    },
  };
}

export type Heartbeat = ReturnType<typeof createHeartbeat>;
