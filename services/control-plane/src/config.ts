import { fileURLToPath } from 'node:url';
import { DEFAULT_PROVIDER_SECRET_PREFIX, ProviderSecretPrefix } from '@tollgate/schemas';
import {
  blankToUndefined,
  ConfigError,
  HttpServerEnv,
  parseEnv,
  serverLimitsOf,
} from '@tollgate/service-kit';
import { z } from 'zod';

const optional = <T extends z.ZodType>(schema: T) => z.preprocess(blankToUndefined, schema.optional());
const withDefault = <T extends z.ZodType>(schema: T, fallback: z.input<T>) =>
  z.preprocess(blankToUndefined, schema.prefault(fallback as never));
const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const MINUTE = 60_000;
const bool = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');

/**
 * Every setting of the control plane, read once from the environment.
 * Only this file reads process.env. The README's configuration table lists each variable.
 */
export const ControlPlaneEnv = z.object({
  CONTROL_PLANE_PORT: withDefault(port, 8081),
  CONTROL_PLANE_HOST: withDefault(z.string(), '0.0.0.0'),
  CONTROL_PLANE_INTERNAL_PORT: withDefault(port, 8082),
  /** The internal billing API is for the gateway only; keep it off public interfaces. */
  CONTROL_PLANE_INTERNAL_HOST: withDefault(z.string(), '127.0.0.1'),
  DATABASE_URL: optional(z.string().url()),
  DATABASE_POOL_SIZE: withDefault(positiveInt, 10),
  /** A pooled connection idle this long is closed (pg's own default is 10 s). */
  DATABASE_IDLE_TIMEOUT_SECONDS: withDefault(positiveInt, 10),
  DATA_DIR: withDefault(z.string(), '.data'),
  REDIS_URL: optional(z.string().url()),
  /** REDIS_URL names one node of a Redis Cluster; the others are discovered. */
  REDIS_CLUSTER: withDefault(bool, 'false'),
  REDIS_KEY_PREFIX: withDefault(z.string(), 'tollgate:'),
  INTERNAL_TOKEN_SECRET: z.string({ error: 'is required' }).min(32, 'must be at least 32 characters'),
  KEY_PEPPER: z.string({ error: 'is required' }).min(32, 'must be at least 32 characters'),
  KEY_ENCRYPTION_KEY: z
    .string({ error: 'is required' })
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 32 bytes as 64 hex characters'),
  /** Provider `credential` names must start with this (the gateway reads no other names). */
  PROVIDER_SECRET_PREFIX: withDefault(ProviderSecretPrefix, DEFAULT_PROVIDER_SECRET_PREFIX),
  CATALOG_FILE: optional(z.string()),
  ...HttpServerEnv,
  /** Prometheus /metrics on a port of its own; unset: no metrics are kept or served. */
  METRICS_PORT: optional(port),
  METRICS_HOST: withDefault(z.string(), '127.0.0.1'),
  /** OTLP/HTTP base URL; when set, spans are exported to <url>/v1/traces. Unset: no export. */
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(z.string().url()),
  LOG_LEVEL: withDefault(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info'),
  /** Behind a TLS-terminating proxy: cookies get Secure and the __Host- prefix. */
  PUBLIC_URL: optional(z.string().url()),
  TRUST_PROXY: withDefault(bool, 'false'),

  // Sessions (browser).
  SESSION_IDLE_TIMEOUT_MINUTES: withDefault(positiveInt, 30),
  SESSION_ABSOLUTE_TIMEOUT_HOURS: withDefault(positiveInt, 12),

  // Email codes and tokens.
  REGISTER_CODE_TTL_MINUTES: withDefault(positiveInt, 15),
  /** Wrong guesses one sign-up code survives before it is void. */
  REGISTER_CODE_MAX_ATTEMPTS: withDefault(positiveInt, 5),
  PASSWORD_RESET_TTL_MINUTES: withDefault(positiveInt, 30),
  /** Lifetime of the password-setup token emailed to a customer a reseller created. */
  PASSWORD_SETUP_TTL_HOURS: withDefault(positiveInt, 72),

  /** Largest request body /api/v1 reads (bytes); refused with 413 request_too_large while read. */
  CONTROL_PLANE_BODY_LIMIT_BYTES: withDefault(positiveInt, 65_536),
  /** Larger body limit for the few routes that need one (admin catalogue updates). */
  CONTROL_PLANE_LARGE_BODY_LIMIT_BYTES: withDefault(positiveInt, 1_048_576),

  // Throttles (Postgres-backed, shared by every control-plane instance). Windows in minutes.
  LOGIN_ADDRESS_LIMIT: withDefault(positiveInt, 30),
  LOGIN_ACCOUNT_ADDRESS_LIMIT: withDefault(positiveInt, 5),
  /** Failures on one account from all addresses; addresses that signed in before are exempt. */
  LOGIN_ACCOUNT_LIMIT: withDefault(positiveInt, 50),
  LOGIN_WINDOW_MINUTES: withDefault(positiveInt, 15),
  EMAIL_SEND_ADDRESS_LIMIT: withDefault(positiveInt, 20),
  EMAIL_SEND_RECIPIENT_LIMIT: withDefault(positiveInt, 5),
  EMAIL_SEND_WINDOW_MINUTES: withDefault(positiveInt, 60),
  CODE_CHECK_ADDRESS_LIMIT: withDefault(positiveInt, 30),
  CODE_CHECK_WINDOW_MINUTES: withDefault(positiveInt, 15),
  KEY_REVEAL_LIMIT: withDefault(positiveInt, 10),
  KEY_REVEAL_WINDOW_MINUTES: withDefault(positiveInt, 60),

  // Inference keys: defaults of the per-key ceilings when a key is created without them.
  KEY_DEFAULT_MAX_REQUEST_BYTES: withDefault(positiveInt, 10_485_760),
  KEY_DEFAULT_MAX_OUTPUT_TOKENS: withDefault(positiveInt, 32_768),
  KEY_DEFAULT_REQUESTS_PER_MINUTE: withDefault(positiveInt, 60),
  KEY_DEFAULT_CONCURRENCY: withDefault(positiveInt, 4),
  // Operator maxima of the per-key ceilings a customer may choose (an admin may set others per
  // account; package plan ceilings bound them further). Customers can only stay at or below them.
  KEY_MAX_REQUEST_BYTES: withDefault(positiveInt, 33_554_432),
  KEY_MAX_OUTPUT_TOKENS: withDefault(positiveInt, 131_072),
  KEY_MAX_REQUESTS_PER_MINUTE: withDefault(positiveInt, 600),
  KEY_MAX_CONCURRENCY: withDefault(positiveInt, 16),
  KEYS_PER_ACCOUNT_LIMIT: withDefault(positiveInt, 100),

  // Reseller management keys: requests per key per minute, and live keys per reseller.
  MANAGEMENT_KEY_REQUESTS_PER_MINUTE: withDefault(positiveInt, 300),
  MANAGEMENT_KEYS_PER_RESELLER_LIMIT: withDefault(positiveInt, 25),

  // Billing: how long a reservation or a hold may stay open before the reconciler releases it.
  RESERVATION_TIMEOUT_MINUTES: withDefault(positiveInt, 30),
  HOLD_TIMEOUT_HOURS: withDefault(positiveInt, 24),
  RECONCILE_INTERVAL_SECONDS: withDefault(positiveInt, 60),
  /**
   * The usage summary reads a rollup advanced this often, up to this many seconds before now (and
   * before the oldest open transaction); calls settled after that are added live.
   */
  USAGE_ROLLUP_INTERVAL_SECONDS: withDefault(positiveInt, 60),
  USAGE_ROLLUP_LAG_SECONDS: withDefault(z.coerce.number().int().min(0), 60),
  /**
   * While an account has reservations open, a new one must leave this percentage of everything
   * then reserved unreserved, so concurrent calls that overrun their estimates are still charged
   * rather than written off. 0 turns the bound off; one call alone is always admitted.
   */
  RESERVE_OVERRUN_COVER_PERCENT: withDefault(z.coerce.number().int().min(0).max(1000), 10),
  /**
   * With REDIS_URL, reservations are answered from a lease of each account's balances in Redis and
   * finished calls written to Postgres in batches (README, "The hot tier"). false: every
   * reservation is a Postgres transaction.
   */
  HOT_TIER: withDefault(bool, 'true'),
  /** A lease no call used for this long is returned to Postgres (and its Redis state dropped). */
  HOT_LEASE_IDLE_SECONDS: withDefault(positiveInt, 300),
  /**
   * A finished call Redis still holds this long after it finished was left by a control plane that
   * stopped; the reconciler writes it to Postgres.
   */
  HOT_WRITE_GRACE_SECONDS: withDefault(positiveInt, 30),

  // Status page: the gateway URL shown to customers, and how heartbeats and samples are read.
  GATEWAY_PUBLIC_URL: withDefault(z.string().url(), 'http://127.0.0.1:8080'),
  /** A gateway whose last heartbeat is older than this counts as down. */
  STATUS_GATEWAY_STALE_SECONDS: withDefault(positiveInt, 30),
  /** Provider outcomes of this many recent minutes decide a provider's current state. */
  STATUS_PROVIDER_WINDOW_MINUTES: withDefault(positiveInt, 5),
  STATUS_SAMPLE_INTERVAL_SECONDS: withDefault(positiveInt, 60),
  STATUS_HISTORY_DAYS: withDefault(positiveInt, 30),
  /** Folder of the built dashboard served at / (default: services/dashboard/dist of this checkout). */
  DASHBOARD_DIR: optional(z.string()),
  // Commerce: orders and payment providers.
  ORDER_TTL_MINUTES: withDefault(positiveInt, 60),
  /** Comma list of stripe, manual, development; the first is an order's default. */
  PAYMENT_PROVIDERS: optional(z.string()),
  STRIPE_SECRET_KEY: optional(z.string()),
  STRIPE_WEBHOOK_SECRET: optional(z.string()),
  /** Another Stripe API address (a local fake in tests). */
  STRIPE_API_URL: optional(z.string().url()),
  MANUAL_PAYMENT_INSTRUCTIONS: withDefault(
    z.string(),
    'Pay by bank transfer and quote the order reference; an operator confirms the payment.',
  ),
  /** A pending payment is asked about again at most this often by the reconciler. */
  PAYMENT_RECHECK_SECONDS: withDefault(positiveInt, 60),

  // Email delivery: SMTP when set, else written to the log (development default).
  SMTP_URL: optional(z.string().url()),
  MAIL_FROM: withDefault(z.string(), 'Tollgate <no-reply@localhost>'),
});

export type ControlPlaneConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const parsed = parseEnv('control-plane', ControlPlaneEnv, env);
  return {
    port: parsed.CONTROL_PLANE_PORT,
    host: parsed.CONTROL_PLANE_HOST,
    internalPort: parsed.CONTROL_PLANE_INTERNAL_PORT,
    internalHost: parsed.CONTROL_PLANE_INTERNAL_HOST,
    databaseUrl: parsed.DATABASE_URL,
    databasePoolSize: parsed.DATABASE_POOL_SIZE,
    databaseIdleTimeoutMs: parsed.DATABASE_IDLE_TIMEOUT_SECONDS * 1000,
    dataDir: parsed.DATA_DIR,
    redisUrl: parsed.REDIS_URL,
    redisCluster: parsed.REDIS_CLUSTER,
    redisKeyPrefix: parsed.REDIS_KEY_PREFIX,
    internalTokenSecret: parsed.INTERNAL_TOKEN_SECRET,
    keyPepper: parsed.KEY_PEPPER,
    keyEncryptionKey: Buffer.from(parsed.KEY_ENCRYPTION_KEY, 'hex'),
    catalogFile: parsed.CATALOG_FILE,
    providerSecretPrefix: parsed.PROVIDER_SECRET_PREFIX,
    logLevel: parsed.LOG_LEVEL,
    http: serverLimitsOf(parsed),
    metrics:
      parsed.METRICS_PORT === undefined
        ? undefined
        : { port: parsed.METRICS_PORT, host: parsed.METRICS_HOST },
    otlpEndpoint: parsed.OTEL_EXPORTER_OTLP_ENDPOINT,
    publicUrl: parsed.PUBLIC_URL,
    trustProxy: parsed.TRUST_PROXY,
    bodyLimits: {
      defaultBytes: parsed.CONTROL_PLANE_BODY_LIMIT_BYTES,
      largeBytes: parsed.CONTROL_PLANE_LARGE_BODY_LIMIT_BYTES,
    },
    sessions: {
      idleTimeoutMs: parsed.SESSION_IDLE_TIMEOUT_MINUTES * MINUTE,
      absoluteTimeoutMs: parsed.SESSION_ABSOLUTE_TIMEOUT_HOURS * 60 * MINUTE,
    },
    emailCodes: {
      registerTtlMs: parsed.REGISTER_CODE_TTL_MINUTES * MINUTE,
      registerMaxAttempts: parsed.REGISTER_CODE_MAX_ATTEMPTS,
      resetTtlMs: parsed.PASSWORD_RESET_TTL_MINUTES * MINUTE,
      setupTtlMs: parsed.PASSWORD_SETUP_TTL_HOURS * 60 * MINUTE,
    },
    throttles: {
      loginPerAddress: { limit: parsed.LOGIN_ADDRESS_LIMIT, windowMs: parsed.LOGIN_WINDOW_MINUTES * MINUTE },
      loginPerAccountAddress: {
        limit: parsed.LOGIN_ACCOUNT_ADDRESS_LIMIT,
        windowMs: parsed.LOGIN_WINDOW_MINUTES * MINUTE,
      },
      loginPerAccount: { limit: parsed.LOGIN_ACCOUNT_LIMIT, windowMs: parsed.LOGIN_WINDOW_MINUTES * MINUTE },
      emailPerAddress: {
        limit: parsed.EMAIL_SEND_ADDRESS_LIMIT,
        windowMs: parsed.EMAIL_SEND_WINDOW_MINUTES * MINUTE,
      },
      emailPerRecipient: {
        limit: parsed.EMAIL_SEND_RECIPIENT_LIMIT,
        windowMs: parsed.EMAIL_SEND_WINDOW_MINUTES * MINUTE,
      },
      codeCheckPerAddress: {
        limit: parsed.CODE_CHECK_ADDRESS_LIMIT,
        windowMs: parsed.CODE_CHECK_WINDOW_MINUTES * MINUTE,
      },
      keyReveal: { limit: parsed.KEY_REVEAL_LIMIT, windowMs: parsed.KEY_REVEAL_WINDOW_MINUTES * MINUTE },
    },
    keyDefaults: {
      maxRequestBytes: parsed.KEY_DEFAULT_MAX_REQUEST_BYTES,
      maxOutputTokens: parsed.KEY_DEFAULT_MAX_OUTPUT_TOKENS,
      requestsPerMinute: parsed.KEY_DEFAULT_REQUESTS_PER_MINUTE,
      concurrency: parsed.KEY_DEFAULT_CONCURRENCY,
    },
    keyMaxima: {
      maxRequestBytes: parsed.KEY_MAX_REQUEST_BYTES,
      maxOutputTokens: parsed.KEY_MAX_OUTPUT_TOKENS,
      requestsPerMinute: parsed.KEY_MAX_REQUESTS_PER_MINUTE,
      concurrency: parsed.KEY_MAX_CONCURRENCY,
    },
    keysPerAccountLimit: parsed.KEYS_PER_ACCOUNT_LIMIT,
    status: {
      gatewayPublicUrl: parsed.GATEWAY_PUBLIC_URL.replace(/\/+$/, ''),
      gatewayStaleMs: parsed.STATUS_GATEWAY_STALE_SECONDS * 1000,
      providerWindowMs: parsed.STATUS_PROVIDER_WINDOW_MINUTES * MINUTE,
      sampleIntervalMs: parsed.STATUS_SAMPLE_INTERVAL_SECONDS * 1000,
      historyDays: parsed.STATUS_HISTORY_DAYS,
    },
    managementKeys: {
      rate: { limit: parsed.MANAGEMENT_KEY_REQUESTS_PER_MINUTE, windowMs: MINUTE },
      perResellerLimit: parsed.MANAGEMENT_KEYS_PER_RESELLER_LIMIT,
    },
    billing: {
      reservationTimeoutMs: parsed.RESERVATION_TIMEOUT_MINUTES * MINUTE,
      holdTimeoutMs: parsed.HOLD_TIMEOUT_HOURS * 60 * MINUTE,
      reconcileIntervalMs: parsed.RECONCILE_INTERVAL_SECONDS * 1000,
      usageRollupIntervalMs: parsed.USAGE_ROLLUP_INTERVAL_SECONDS * 1000,
      usageRollupLagMs: parsed.USAGE_ROLLUP_LAG_SECONDS * 1000,
      overrunCoverPercent: parsed.RESERVE_OVERRUN_COVER_PERCENT,
    },
    hotTier:
      parsed.HOT_TIER && parsed.REDIS_URL
        ? {
            idleMs: parsed.HOT_LEASE_IDLE_SECONDS * 1000,
            writeGraceMs: parsed.HOT_WRITE_GRACE_SECONDS * 1000,
          }
        : null,
    /** The environment, for `${NAME}` references in the catalogue file. */
    env,
    smtpUrl: parsed.SMTP_URL,
    dashboardDir: parsed.DASHBOARD_DIR ?? fileURLToPath(new URL('../../dashboard/dist', import.meta.url)),
    mailFrom: parsed.MAIL_FROM,
    commerce: commerceConfig(parsed),
  };
}

const PAYMENT_PROVIDER_IDS = ['stripe', 'manual', 'development'] as const;
export type PaymentProviderId = (typeof PAYMENT_PROVIDER_IDS)[number];

/** Payment providers: cross-checked here so a half-configured one stops the start. */
function commerceConfig(parsed: z.infer<typeof ControlPlaneEnv>) {
  const https = parsed.PUBLIC_URL?.startsWith('https:') ?? false;
  // The development provider pays without money: only for a machine that is not public.
  const fallback = https ? 'manual' : 'development';
  const names = (parsed.PAYMENT_PROVIDERS ?? fallback)
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const problems: string[] = [];
  for (const name of names) {
    if (!(PAYMENT_PROVIDER_IDS as readonly string[]).includes(name))
      problems.push(`PAYMENT_PROVIDERS: unknown provider ${name} (use ${PAYMENT_PROVIDER_IDS.join(', ')})`);
  }
  if (names.length === 0) problems.push('PAYMENT_PROVIDERS: name at least one provider');
  if (https && names.includes('development'))
    problems.push('PAYMENT_PROVIDERS: development is refused when PUBLIC_URL is https');
  if (names.includes('stripe') && (!parsed.STRIPE_SECRET_KEY || !parsed.STRIPE_WEBHOOK_SECRET))
    problems.push('PAYMENT_PROVIDERS: stripe needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET');
  if (problems.length > 0) throw new ConfigError('control-plane', problems);
  return {
    orderTtlMs: parsed.ORDER_TTL_MINUTES * MINUTE,
    providers: names as PaymentProviderId[],
    stripe: {
      secretKey: parsed.STRIPE_SECRET_KEY,
      webhookSecret: parsed.STRIPE_WEBHOOK_SECRET,
      apiUrl: parsed.STRIPE_API_URL,
    },
    manualInstructions: parsed.MANUAL_PAYMENT_INSTRUCTIONS,
    recheckMs: parsed.PAYMENT_RECHECK_SECONDS * 1000,
  };
}
