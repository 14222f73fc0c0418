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
 * Every setting of the gateway, read once from the environment. Only this file reads process.env.
 * Each description is what docs/operations/configuration.md says of the variable
 * (`pnpm docs:generate` writes the page; config.docs.test.ts fails when it drifts).
 */
export const GatewayEnv = z.object({
  GATEWAY_PORT: withDefault(port, 8080).describe('Port of the inference API.'),
  GATEWAY_HOST: withDefault(z.string(), '0.0.0.0').describe('Interface the inference API binds.'),
  CONTROL_PLANE_INTERNAL_URL: withDefault(z.string().url(), 'http://127.0.0.1:8082').describe(
    "Where the gateway finds the control plane's internal billing API.",
  ),
  INTERNAL_TOKEN_SECRET: z
    .string({ error: 'is required' })
    .min(32, 'must be at least 32 characters')
    .describe(
      "Shared secret that signs the gateway's service tokens; the same value as the control plane's.",
    ),
  REDIS_URL: optional(z.string().url()).describe(
    'Redis for shared rate and concurrency limits, key-change events and kept settlements. Unset: an in-process limiter (one gateway only) and the key cache off.',
  ),
  REDIS_CLUSTER: withDefault(bool, 'false').describe(
    '`true`: `REDIS_URL` names one node of a Redis Cluster; the others are discovered.',
  ),
  REDIS_KEY_PREFIX: withDefault(z.string(), 'tollgate:').describe(
    'Prefix of every Redis key and channel. The gateway sends it with each reservation batch, so the control plane counts limits in the same keys.',
  ),
  GATEWAY_MAX_REQUEST_BYTES: withDefault(positiveInt, 32 * 1024 * 1024).describe(
    'Service-wide request body limit in bytes; a key may set a lower one. Larger bodies get `request_too_large` (413) while being read.',
  ),
  GATEWAY_MAX_JSON_DEPTH: withDefault(positiveInt, 64).describe(
    'Deepest JSON nesting of a request body; deeper is refused (`invalid_request`, 400) before parsing.',
  ),
  GATEWAY_MAX_CHOICES: withDefault(positiveInt, 16).describe(
    'Most choices (`n`) one chat-completions call may ask for; the reservation covers the maximum output once per choice. More is refused with `unsupported_parameter`.',
  ),
  COUNT_TOKENS_MAX_REQUEST_BYTES: withDefault(positiveInt, 4 * 1024 * 1024).describe(
    'Body limit of `/v1/messages/count_tokens` in bytes (the service and key limits apply too): counting is free for the caller, so its work is bounded more tightly.',
  ),
  COUNT_TOKENS_THREADS: withDefault(positiveInt, 1).describe(
    'Worker threads that parse and count count_tokens bodies, off the event loop that serves every other call.',
  ),
  TRUST_PROXY: withDefault(bool, 'false').describe(
    '`true` behind a proxy or load balancer: the client address is the last `X-Forwarded-For` entry (the one the proxy appended), for the per-address throttle of unrecognised keys.',
  ),
  UNKNOWN_KEY_CACHE_SECONDS: withDefault(positiveInt, 60).describe(
    'How long a key the control plane did not recognise is answered `invalid_api_key` from memory, without asking again.',
  ),
  UNKNOWN_KEYS_PER_ADDRESS_PER_MINUTE: withDefault(positiveInt, 20).describe(
    'Unrecognised keys one client address (an IPv6 /64) may try per minute; past it, keys it has not used successfully get `rate_limit_exceeded` until the minute ends, so a flood of made-up keys never reaches the control plane.',
  ),
  GATEWAY_ANTHROPIC_BETAS: withDefault(z.string(), '').describe(
    'Comma-separated `anthropic-beta` values admitted on `/v1/messages` besides the built-in list of betas billed only as reported tokens (docs/pricing.md). Add one only if the alias prices cover what it costs.',
  ),
  UPSTREAM_CONNECT_TIMEOUT_MS: withDefault(positiveInt, 5_000).describe('Connect timeout to providers.'),
  UPSTREAM_HEADERS_TIMEOUT_MS: withDefault(positiveInt, 300_000).describe(
    "Longest wait for a provider's response headers (a non-streamed answer comes whole after them).",
  ),
  UPSTREAM_BODY_TIMEOUT_MS: withDefault(positiveInt, 300_000).describe(
    "Longest silence between two chunks of a provider's body; also bounds, in total, reading an answer on after its client left.",
  ),
  STREAM_CLIENT_STALL_MS: withDefault(positiveInt, 60_000).describe(
    "Longest a stream waits for its client to take what was already written (its socket's buffer full, the provider paused meanwhile); past it the connection is closed and the call ends as if the client had left.",
  ),
  ROUTING_MAX_ATTEMPTS: withDefault(positiveInt, 3).describe(
    'Upstreams one call may try when an alias has several: the next is tried only when the one before failed before anything reached the client (docs/routing.md).',
  ),
  ROUTING_COOLDOWN_MS: withDefault(z.coerce.number().int().min(0), 10_000).describe(
    "How long an upstream that failed a call before its first byte is tried last among its alias's upstreams (0: never, Retry-After included). A provider's Retry-After replaces it, up to ROUTING_MAX_RETRY_AFTER_SECONDS.",
  ),
  ROUTING_MAX_RETRY_AFTER_SECONDS: withDefault(positiveInt, 300).describe(
    "The longest a provider's Retry-After benches an upstream.",
  ),
  ROUTING_AFFINITY_TTL_SECONDS: withDefault(positiveInt, 3_600).describe(
    "How long a conversation stays with the upstream that served its last turn (prompt-cache affinity), counted from that turn; kept in Redis when REDIS_URL is set, else in the gateway's memory.",
  ),
  ROUTING_CREDENTIAL_RECHECK_SECONDS: withDefault(positiveInt, 300).describe(
    "How long a credential of a provider's pool that the provider refused (401/403) stays out of rotation before calls try it again.",
  ),
  ROUTING_BREAKERS: withDefault(bool, 'true').describe(
    "`false` turns the upstream circuit breakers off, and with them the shared benches of a provider's Retry-After (docs/routing.md).",
  ),
  ROUTING_BREAKER_FAILURES: withDefault(positiveInt, 5).describe(
    "Failures in a row (across all gateways) that open an upstream's breaker.",
  ),
  ROUTING_BREAKER_ERROR_PERCENT: withDefault(z.coerce.number().int().min(1).max(100), 50).describe(
    "Share of an upstream's calls in ROUTING_BREAKER_WINDOW_MS, in whole per cent, whose failure opens its breaker (once ROUTING_BREAKER_MIN_CALLS were made).",
  ),
  ROUTING_BREAKER_WINDOW_MS: withDefault(positiveInt, 30_000).describe(
    'The window over which the error rate of an upstream is counted.',
  ),
  ROUTING_BREAKER_MIN_CALLS: withDefault(positiveInt, 10).describe(
    'Calls an upstream must have had in the window before its error rate can open its breaker.',
  ),
  ROUTING_BREAKER_OPEN_MS: withDefault(positiveInt, 10_000).describe(
    'How long an open breaker keeps its upstream out before one probe call is let through; each failed probe doubles it, up to ROUTING_BREAKER_MAX_OPEN_MS.',
  ),
  ROUTING_BREAKER_MAX_OPEN_MS: withDefault(positiveInt, 300_000).describe(
    'The longest cool-down of an open breaker.',
  ),
  BILLING_TIMEOUT_MS: withDefault(positiveInt, 5_000).describe(
    "Deadline of one call to the control plane, time in the gateway's queue included; past it the call gets `billing_unavailable` and an unanswered reservation is released.",
  ),
  BILLING_CONNECTIONS: withDefault(positiveInt, 16).describe(
    'Keep-alive connections to the internal billing API.',
  ),
  // Two: a second batch overlaps the round trip most of a call's wait is
  // (docs/decisions/reservation-batches-in-flight.md).
  RESERVE_MAX_IN_FLIGHT: withDefault(positiveInt, 2).describe(
    'Reservation calls under way at once; reservations queued behind them leave as one batch.',
  ),
  FINISH_FLUSH_MS: withDefault(positiveInt, 20).describe(
    'Settlements, releases and holds wait at most this long to leave together in one batch.',
  ),
  RECEIPT_WAIT_MS: withDefault(z.coerce.number().int().min(0), 1_000).describe(
    "Longest the end of an answer waits for its settlement's charge (the receipt); past it the answer ends with its cost marked `unconfirmed` and the settlement lands later, unchanged. 0: answers never wait, every cost is `unconfirmed` and read by its request id (settlements batch as without receipts).",
  ),
  FINISH_MAX_QUEUED: withDefault(positiveInt, 200_000).describe(
    'Settlements held in memory while the control plane is unreachable; beyond it they are kept in Redis and `GATEWAY_DATA_DIR`.',
  ),
  SHUTDOWN_DRAIN_MS: withDefault(positiveInt, 10_000).describe(
    'How long a stopping gateway tries to deliver its queued settlements before keeping them in Redis and `GATEWAY_DATA_DIR`.',
  ),
  GATEWAY_DATA_DIR: withDefault(z.string(), '.data/gateway').describe(
    "Folder of settlements kept across restarts (`pending-finishes.jsonl`), delivered at this gateway's next start. Give it a persistent volume so a Redis that loses its data loses none of them.",
  ),
  KEY_CACHE_TTL_SECONDS: withDefault(z.coerce.number().int().min(0), 60).describe(
    'How long a resolved key is cached; dropped at once on key-change events. Off without Redis (no events to drop it).',
  ),
  CATALOG_REFRESH_SECONDS: withDefault(positiveInt, 30).describe(
    'Catalogue reload interval (it is also reloaded on change events).',
  ),
  LIMIT_WINDOW_SECONDS: withDefault(positiveInt, 60).describe('Window of the per-minute request ceilings.'),
  LEASE_TTL_SECONDS: withDefault(positiveInt, 5).describe(
    'A concurrency slot held by a gateway that died frees itself after this long; slots of running calls are renewed every third of it.',
  ),
  CONCURRENCY_RETRY_AFTER_SECONDS: withDefault(positiveInt, 1).describe(
    '`Retry-After` of `concurrency_limit_exceeded`.',
  ),
  SECRETS_FILE: optional(z.string()).describe(
    'JSON file `{"NAME": "secret"}` of provider credentials, read at start; names not in it are read from the environment.',
  ),
  INPUT_ESTIMATE_MARGIN_PERCENT: withDefault(z.coerce.number().int().min(0).max(1000), 10).describe(
    "Whole per cent added to every reservation's input-token estimate, for what local counting misses (not added to count_tokens answers).",
  ),
  PROVIDER_SECRET_PREFIX: withDefault(ProviderSecretPrefix, DEFAULT_PROVIDER_SECRET_PREFIX).describe(
    'Provider credentials are read only under names with this prefix (file or environment); no other variable is ever sent to a provider.',
  ),
  ...HttpServerEnv,
  STATUS_HEARTBEAT_SECONDS: withDefault(positiveInt, 10).describe(
    'How often the gateway reports liveness, Redis reachability and upstream outcomes for the status page.',
  ),
  METRICS_PORT: optional(port).describe(
    'Prometheus `GET /metrics` on this port only. Unset: no metrics are kept or served.',
  ),
  METRICS_HOST: withDefault(z.string(), '127.0.0.1').describe(
    'Interface of the metrics port (`0.0.0.0` in containers).',
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(z.string().url()).describe(
    'OTLP/HTTP collector base URL; set, spans are exported to `<url>/v1/traces`. Unset: OpenTelemetry is not loaded.',
  ),
  LOG_LEVEL: withDefault(
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    'info',
  ).describe('pino log level. Logs never carry keys, passwords, cookies or session tokens.'),
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
    trustProxy: parsed.TRUST_PROXY,
    unknownKeys: {
      ttlMs: parsed.UNKNOWN_KEY_CACHE_SECONDS * 1000,
      perAddressPerMinute: parsed.UNKNOWN_KEYS_PER_ADDRESS_PER_MINUTE,
    },
    countTokens: {
      maxRequestBytes: parsed.COUNT_TOKENS_MAX_REQUEST_BYTES,
      threads: parsed.COUNT_TOKENS_THREADS,
    },
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
    streamClientStallMs: parsed.STREAM_CLIENT_STALL_MS,
    routing: {
      maxAttempts: parsed.ROUTING_MAX_ATTEMPTS,
      cooldownMs: parsed.ROUTING_COOLDOWN_MS,
      maxRetryAfterMs: parsed.ROUTING_MAX_RETRY_AFTER_SECONDS * 1000,
      credentialRecheckMs: parsed.ROUTING_CREDENTIAL_RECHECK_SECONDS * 1000,
      affinityTtlMs: parsed.ROUTING_AFFINITY_TTL_SECONDS * 1000,
      breakers: parsed.ROUTING_BREAKERS
        ? {
            failures: parsed.ROUTING_BREAKER_FAILURES,
            errorPercent: parsed.ROUTING_BREAKER_ERROR_PERCENT,
            windowMs: parsed.ROUTING_BREAKER_WINDOW_MS,
            minCalls: parsed.ROUTING_BREAKER_MIN_CALLS,
            openMs: parsed.ROUTING_BREAKER_OPEN_MS,
            maxOpenMs: parsed.ROUTING_BREAKER_MAX_OPEN_MS,
            maxRetryAfterMs: parsed.ROUTING_MAX_RETRY_AFTER_SECONDS * 1000,
            // A probe unanswered for longer than the provider may take to answer is lost.
            probeTimeoutMs: parsed.UPSTREAM_CONNECT_TIMEOUT_MS + parsed.UPSTREAM_HEADERS_TIMEOUT_MS,
          }
        : null,
    },
    billing: {
      timeoutMs: parsed.BILLING_TIMEOUT_MS,
      connections: parsed.BILLING_CONNECTIONS,
      reserveMaxInFlight: parsed.RESERVE_MAX_IN_FLIGHT,
      finishFlushMs: parsed.FINISH_FLUSH_MS,
      finishMaxQueued: parsed.FINISH_MAX_QUEUED,
      receiptWaitMs: parsed.RECEIPT_WAIT_MS,
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
