import { z } from 'zod';

/**
 * A gateway's heartbeat to the control plane's internal API (POST /internal/v1/status/heartbeat).
 * It proves the gateway is alive and carries the upstream outcomes seen since its last beat,
 * per provider, so the status page can say when a provider fails.
 */
export const ProviderOutcomeCounts = z.object({
  providerId: z.string().min(1).max(200),
  /** Calls the provider answered (any valid response, including its own 4xx refusals). */
  successes: z.number().int().min(0).max(1_000_000_000),
  /** Calls the provider failed: unreachable, timed out, 5xx or an unreadable body. */
  failures: z.number().int().min(0).max(1_000_000_000),
});
export type ProviderOutcomeCounts = z.infer<typeof ProviderOutcomeCounts>;

/** One upstream's breaker as a gateway reports it (docs/routing.md, circuit breakers). */
export const UpstreamBreakerReport = z.object({
  providerId: z.string().min(1).max(64),
  upstreamModel: z.string().min(1).max(256),
  state: z.enum(['open', 'closed']),
  /** Why it opened: consecutive_failures, error_rate or probe_failed. */
  reason: z.string().max(64).nullable(),
  /** The failure that opened or benched it: a code and the provider's status, never its text. */
  cause: z.string().max(256).nullable(),
  trips: z.number().int().min(0),
  failures: z.number().int().min(0),
  calls: z.number().int().min(0),
  changedAt: z.string().datetime({ offset: true }),
  /** When its cool-down ends and one probe may go (open only). */
  openUntil: z.string().datetime({ offset: true }).nullable(),
  /** When the provider's Retry-After ends (benched only). */
  benchedUntil: z.string().datetime({ offset: true }).nullable(),
});
export type UpstreamBreakerReport = z.infer<typeof UpstreamBreakerReport>;

export const GatewayHeartbeat = z.object({
  /** Random per process start: a restarted gateway is a new instance. */
  gatewayId: z.string().uuid(),
  startedAt: z.string().datetime({ offset: true }),
  /** The gateway's Redis (limits, key events): reachable, failing, or not used (in-process limiter). */
  redis: z.enum(['ok', 'failing', 'not_configured']),
  providers: z.array(ProviderOutcomeCounts).max(1000),
  /**
   * Credentials this gateway took out of rotation because their provider refused them (names,
   * never values); each beat replaces the gateway's list. Absent: none.
   */
  refusedCredentials: z
    .array(
      z.object({
        providerId: z.string().min(1).max(64),
        credential: z.string().min(1).max(256),
        upstreamStatus: z.number().int().nullable(),
        refusedAt: z.string().datetime({ offset: true }),
      }),
    )
    .max(1000)
    .optional(),
  /**
   * The upstreams whose circuit breaker is open or that a provider's Retry-After benched, as this
   * gateway knows them (shared through Redis: every gateway reports the same); each beat replaces
   * the gateway's list. Absent: none.
   */
  upstreamBreakers: z.array(UpstreamBreakerReport).max(1000).optional(),
});
export type GatewayHeartbeat = z.infer<typeof GatewayHeartbeat>;

export const GatewayHeartbeatAnswer = z.object({ accepted: z.literal(true) });
export type GatewayHeartbeatAnswer = z.infer<typeof GatewayHeartbeatAnswer>;
