import { DEFAULT_PROVIDER_SECRET_PREFIX, ProviderSecretPrefix } from '@tollgate/schemas';
import { blankToUndefined, HttpServerEnv, parseEnv, serverLimitsOf } from '@tollgate/service-kit';
import { z } from 'zod';

const optional = <T extends z.ZodType>(schema: T) => z.preprocess(blankToUndefined, schema.optional());
const withDefault = <T extends z.ZodType>(schema: T, fallback: z.input<T>) =>
  z.preprocess(blankToUndefined, schema.prefault(fallback as never));
const bool = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');
const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();

/**
 * Every setting of the gateway, read once from the environment.
 * Only this file reads process.env. The README's configuration table lists each variable.
 */
export const GatewayEnv = z.object({
  GATEWAY_PORT: withDefault(port, 8080),
  GATEWAY_HOST: withDefault(z.string(), '0.0.0.0'),
  CONTROL_PLANE_INTERNAL_URL: withDefault(z.string().url(), 'http://127.0.0.1:8082'),
  INTERNAL_TOKEN_SECRET: z.string({ error: 'is required' }).min(32, 'must be at least 32 characters'),
  REDIS_URL: optional(z.string().url()),
  /** REDIS_URL names one node of a Redis Cluster; the others are discovered. */
  REDIS_CLUSTER: withDefault(bool, 'false'),
  REDIS_KEY_PREFIX: withDefault(z.string(), 'tollgate:'),
  /** Service-wide request body ceiling; each key may set a lower one. */
  GATEWAY_MAX_REQUEST_BYTES: withDefault(positiveInt, 32 * 1024 * 1024),
  /** Deepest JSON nesting accepted in a request body; deeper is refused before parsing. */
  GATEWAY_MAX_JSON_DEPTH: withDefault(positiveInt, 64),
  GATEWAY_MAX_CHOICES: withDefault(positiveInt, 16).describe(
    'Most choices (`n`) one chat-completions call may ask for; the reservation covers the maximum output once per choice. More is refused with `unsupported_parameter`.',
  ),
  GATEWAY_ANTHROPIC_BETAS: withDefault(z.string(), '').describe(
    'Comma-separated `anthropic-beta` values admitted on `/v1/messages` besides the built-in list of betas billed only as reported tokens (docs/pricing.md). Add one only if the alias prices cover what it costs.',
  ),
  UPSTREAM_CONNECT_TIMEOUT_MS: withDefault(positiveInt, 5_000),
  /** Longest wait for the upstream's response headers (a non-streamed answer comes whole). */
  UPSTREAM_HEADERS_TIMEOUT_MS: withDefault(positiveInt, 300_000),
  /** Longest silence between two chunks of an upstream body. */
  UPSTREAM_BODY_TIMEOUT_MS: withDefault(positiveInt, 300_000),
  /** Deadline of one call to the control plane; past it the gateway answers billing_unavailable. */
  BILLING_TIMEOUT_MS: withDefault(positiveInt, 5_000),
  BILLING_CONNECTIONS: withDefault(positiveInt, 16),
  /**
   * Reservation calls under way at once; reservations queued behind them leave as one batch. One:
   * now that a reservation is one Redis script behind the control plane, larger batches cost less
   * than a second round trip saves (README, Benchmarks).
   */
  RESERVE_MAX_IN_FLIGHT: withDefault(positiveInt, 1),
  /** Settles/releases/holds wait at most this long to leave together in one batch. */
  FINISH_FLUSH_MS: withDefault(positiveInt, 20),
  /** Most settlements held in memory while the control plane is unreachable; the rest are kept on disk/Redis. */
  FINISH_MAX_QUEUED: withDefault(positiveInt, 200_000),
  /** How long a stopping gateway tries to deliver its queued settlements before keeping them. */
  SHUTDOWN_DRAIN_MS: withDefault(positiveInt, 10_000),
  /** Folder for settlements kept across restarts when there is no Redis. */
  GATEWAY_DATA_DIR: withDefault(z.string(), '.data/gateway'),
  /** How long a resolved key is cached (dropped at once on change events; off without Redis). */
  KEY_CACHE_TTL_SECONDS: withDefault(z.coerce.number().int().min(0), 60),
  CATALOG_REFRESH_SECONDS: withDefault(positiveInt, 30),
  /** Length of the rate windows of the "per minute" ceilings. */
  LIMIT_WINDOW_SECONDS: withDefault(positiveInt, 60),
  /**
   * A concurrency slot held by a gateway that died frees itself after this long; leases of calls
   * still running are renewed every third of it.
   */
  LEASE_TTL_SECONDS: withDefault(positiveInt, 5),
  CONCURRENCY_RETRY_AFTER_SECONDS: withDefault(positiveInt, 1),
  /** JSON object of provider credentials by name, read at start (alternative to env variables). */
  SECRETS_FILE: optional(z.string()),
  /** Added to every reservation's input estimate (whole per cent), for what local counting misses. */
  INPUT_ESTIMATE_MARGIN_PERCENT: withDefault(z.coerce.number().int().min(0).max(1000), 10),
  /** Provider credentials are read only under names with this prefix (file or environment). */
  PROVIDER_SECRET_PREFIX: withDefault(ProviderSecretPrefix, DEFAULT_PROVIDER_SECRET_PREFIX),
  ...HttpServerEnv,
  /** How often the gateway reports liveness and upstream outcomes for the status page. */
  STATUS_HEARTBEAT_SECONDS: withDefault(positiveInt, 10),
  /** Prometheus /metrics on a port of its own; unset: no metrics are kept or served. */
  METRICS_PORT: optional(port),
  METRICS_HOST: withDefault(z.string(), '127.0.0.1'),
  /** OTLP/HTTP base URL; when set, spans are exported to <url>/v1/traces. Unset: no export. */
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(z.string().url()),
  LOG_LEVEL: withDefault(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info'),
});

export type GatewayConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const parsed = parseEnv('gateway', GatewayEnv, env);
  return {
    port: parsed.GATEWAY_PORT,
    host: parsed.GATEWAY_HOST,
    controlPlaneUrl: parsed.CONTROL_PLANE_INTERNAL_URL.replace(/\/+$/, ''),
    internalTokenSecret: parsed.INTERNAL_TOKEN_SECRET,
    redisUrl: parsed.REDIS_URL,
    redisCluster: parsed.REDIS_CLUSTER,
    redisKeyPrefix: parsed.REDIS_KEY_PREFIX,
    maxRequestBytes: parsed.GATEWAY_MAX_REQUEST_BYTES,
    maxJsonDepth: parsed.GATEWAY_MAX_JSON_DEPTH,
    costParameters: {
      maxChoices: parsed.GATEWAY_MAX_CHOICES,
      extraAnthropicBetas: new Set(
        parsed.GATEWAY_ANTHROPIC_BETAS.split(',')
          .map((beta) => beta.trim())
          .filter(Boolean),
      ),
    },
    upstream: {
      connectTimeoutMs: parsed.UPSTREAM_CONNECT_TIMEOUT_MS,
      headersTimeoutMs: parsed.UPSTREAM_HEADERS_TIMEOUT_MS,
      bodyTimeoutMs: parsed.UPSTREAM_BODY_TIMEOUT_MS,
    },
    billing: {
      timeoutMs: parsed.BILLING_TIMEOUT_MS,
      connections: parsed.BILLING_CONNECTIONS,
      reserveMaxInFlight: parsed.RESERVE_MAX_IN_FLIGHT,
      finishFlushMs: parsed.FINISH_FLUSH_MS,
      finishMaxQueued: parsed.FINISH_MAX_QUEUED,
      shutdownDrainMs: parsed.SHUTDOWN_DRAIN_MS,
    },
    dataDir: parsed.GATEWAY_DATA_DIR,
    keyCacheTtlMs: parsed.KEY_CACHE_TTL_SECONDS * 1000,
    catalogRefreshMs: parsed.CATALOG_REFRESH_SECONDS * 1000,
    limits: {
      windowMs: parsed.LIMIT_WINDOW_SECONDS * 1000,
      leaseTtlMs: parsed.LEASE_TTL_SECONDS * 1000,
      concurrencyRetryAfterSeconds: parsed.CONCURRENCY_RETRY_AFTER_SECONDS,
    },
    http: serverLimitsOf(parsed),
    secretsFile: parsed.SECRETS_FILE,
    inputEstimateMarginPercent: parsed.INPUT_ESTIMATE_MARGIN_PERCENT,
    providerSecretPrefix: parsed.PROVIDER_SECRET_PREFIX,
    heartbeatIntervalMs: parsed.STATUS_HEARTBEAT_SECONDS * 1000,
    logLevel: parsed.LOG_LEVEL,
    metrics:
      parsed.METRICS_PORT === undefined
        ? undefined
        : { port: parsed.METRICS_PORT, host: parsed.METRICS_HOST },
    otlpEndpoint: parsed.OTEL_EXPORTER_OTLP_ENDPOINT,
    /** Provider credentials are looked up by name here (credentialRef in the catalogue). */
    env,
  };
}
