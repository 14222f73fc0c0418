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
 * Every setting of the control plane, read once from the environment. Only this file reads
 * process.env. Each description is what docs/operations/configuration.md says of the variable
 * (`pnpm docs:generate` writes the page; config.docs.test.ts fails when it drifts).
 */
export const ControlPlaneEnv = z.object({
  CONTROL_PLANE_PORT: withDefault(port, 8081).describe(
    'Port of the public API (`/api/v1`) and the dashboard.',
  ),
  CONTROL_PLANE_HOST: withDefault(z.string(), '0.0.0.0').describe('Interface of the public API.'),
  CONTROL_PLANE_INTERNAL_PORT: withDefault(port, 8082).describe(
    "Port of the internal billing API (the gateway's).",
  ),
  CONTROL_PLANE_INTERNAL_HOST: withDefault(z.string(), '127.0.0.1').describe(
    'Interface of the internal billing API. It is for the gateways only: never expose it publicly.',
  ),
  DATABASE_URL: optional(z.string().url()).describe(
    'Postgres URL. Unset: an embedded Postgres (PGlite) in `DATA_DIR`, for development and single-machine trials.',
  ),
  DATABASE_POOL_SIZE: withDefault(positiveInt, 10).describe(
    'Postgres connections in the pool (the embedded database serves one session).',
  ),
  DATABASE_IDLE_TIMEOUT_SECONDS: withDefault(positiveInt, 10).describe(
    'A pooled connection idle this long is closed; the next query opens a new one.',
  ),
  DATA_DIR: withDefault(z.string(), '.data').describe(
    'Folder of the embedded database (when `DATABASE_URL` is unset).',
  ),
  REDIS_URL: optional(z.string().url()).describe(
    'Redis for the hot tier, shared limits and key-change events. Unset: every reservation is a Postgres transaction.',
  ),
  REDIS_CLUSTER: withDefault(bool, 'false').describe(
    '`true`: `REDIS_URL` names one node of a Redis Cluster; the others are discovered.',
  ),
  REDIS_KEY_PREFIX: withDefault(z.string(), 'tollgate:').describe(
    "Prefix of every Redis key and channel; the gateways' must be the same.",
  ),
  INTERNAL_TOKEN_SECRET: z
    .string({ error: 'is required' })
    .min(32, 'must be at least 32 characters')
    .describe("Shared secret that checks the gateways' service tokens; the same value as the gateways'."),
  KEY_PEPPER: z
    .string({ error: 'is required' })
    .min(32, 'must be at least 32 characters')
    .describe('Server-side pepper of the HMAC-SHA256 lookup hashes of inference and management keys.'),
  KEY_ENCRYPTION_KEY: z
    .string({ error: 'is required' })
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 32 bytes as 64 hex characters')
    .describe('32 bytes as 64 hex characters: the AES-256-GCM key of re-copyable key secrets.'),
  PROVIDER_SECRET_PREFIX: withDefault(ProviderSecretPrefix, DEFAULT_PROVIDER_SECRET_PREFIX).describe(
    'A provider `credential` name must start with this; the catalogue file and the admin routes refuse any other (the gateways read no other).',
  ),
  CATALOG_FILE: optional(z.string()).describe(
    'Catalogue file (providers, aliases, packages) synced at start (docs/providers.md).',
  ),
  ...HttpServerEnv,
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
  PUBLIC_URL: optional(z.string().url()).describe(
    'Public URL of the control plane. Emails link to the dashboard on it (password reset, invitations); unset, they link to `http://127.0.0.1:<CONTROL_PLANE_PORT>`. https: cookies get `Secure` and the `__Host-` prefix, and the development payment provider is refused.',
  ),
  TRUST_PROXY: withDefault(bool, 'false').describe(
    'Take the client address from `X-Forwarded-For` (behind a proxy you run).',
  ),

  SESSION_IDLE_TIMEOUT_MINUTES: withDefault(positiveInt, 30).describe(
    'A session unused this long ends (`session_expired`).',
  ),
  SESSION_ABSOLUTE_TIMEOUT_HOURS: withDefault(positiveInt, 12).describe(
    'A session ends this long after sign-in, however active.',
  ),

  REGISTER_CODE_TTL_MINUTES: withDefault(positiveInt, 15).describe('Lifetime of a sign-up code.'),
  REGISTER_CODE_MAX_ATTEMPTS: withDefault(positiveInt, 5).describe(
    'Wrong guesses one sign-up code survives before it is void.',
  ),
  PASSWORD_RESET_TTL_MINUTES: withDefault(positiveInt, 30).describe('Lifetime of a password-reset token.'),
  PASSWORD_SETUP_TTL_HOURS: withDefault(positiveInt, 72).describe(
    'Lifetime of the token in a reseller’s invitation email.',
  ),

  CONTROL_PLANE_BODY_LIMIT_BYTES: withDefault(positiveInt, 65_536).describe(
    'Largest `/api/v1` request body, counted while read (declared or chunked); over it: 413 `request_too_large` and the connection closes.',
  ),
  CONTROL_PLANE_LARGE_BODY_LIMIT_BYTES: withDefault(positiveInt, 1_048_576).describe(
    'Body limit of the few routes that need more (admin catalogue updates).',
  ),

  // Throttles: Postgres-backed, shared by every control-plane instance.
  LOGIN_ADDRESS_LIMIT: withDefault(positiveInt, 30).describe(
    'Login attempts per client address per `LOGIN_WINDOW_MINUTES`.',
  ),
  LOGIN_ACCOUNT_ADDRESS_LIMIT: withDefault(positiveInt, 5).describe(
    'Failed logins per account and address per `LOGIN_WINDOW_MINUTES`.',
  ),
  LOGIN_ACCOUNT_LIMIT: withDefault(positiveInt, 50).describe(
    'Failed logins per account from all addresses per `LOGIN_WINDOW_MINUTES`; addresses that signed in to it before are exempt.',
  ),
  LOGIN_WINDOW_MINUTES: withDefault(positiveInt, 15).describe('Window of the three login throttles.'),
  EMAIL_SEND_ADDRESS_LIMIT: withDefault(positiveInt, 20).describe(
    'Sign-up and reset emails requested per client address per `EMAIL_SEND_WINDOW_MINUTES`.',
  ),
  EMAIL_SEND_RECIPIENT_LIMIT: withDefault(positiveInt, 5).describe(
    'Sign-up and reset emails per recipient per `EMAIL_SEND_WINDOW_MINUTES`.',
  ),
  EMAIL_SEND_WINDOW_MINUTES: withDefault(positiveInt, 60).describe('Window of the two email throttles.'),
  CODE_CHECK_ADDRESS_LIMIT: withDefault(positiveInt, 30).describe(
    'Sign-up code and reset token checks per client address per `CODE_CHECK_WINDOW_MINUTES`.',
  ),
  CODE_CHECK_WINDOW_MINUTES: withDefault(positiveInt, 15).describe('Window of the code-check throttle.'),
  KEY_REVEAL_LIMIT: withDefault(positiveInt, 10).describe(
    'Copy-key reveals per account per `KEY_REVEAL_WINDOW_MINUTES`.',
  ),
  KEY_REVEAL_WINDOW_MINUTES: withDefault(positiveInt, 60).describe('Window of the reveal throttle.'),
  PROMOTION_CODE_ACCOUNT_LIMIT: withDefault(positiveInt, 30).describe(
    'Promotion code previews and orders naming a code, per account per `PROMOTION_CODE_WINDOW_MINUTES`.',
  ),
  PROMOTION_CODE_ADDRESS_LIMIT: withDefault(positiveInt, 100).describe(
    'Promotion code previews and orders naming a code, per client address per `PROMOTION_CODE_WINDOW_MINUTES`.',
  ),
  PROMOTION_CODE_WINDOW_MINUTES: withDefault(positiveInt, 15).describe(
    'Window of the two promotion code throttles.',
  ),

  KEY_DEFAULT_MAX_REQUEST_BYTES: withDefault(positiveInt, 10_485_760).describe(
    "A new key's `max_request_bytes` when none is given.",
  ),
  KEY_DEFAULT_MAX_OUTPUT_TOKENS: withDefault(positiveInt, 32_768).describe(
    "A new key's output ceiling when none is given.",
  ),
  KEY_DEFAULT_REQUESTS_PER_MINUTE: withDefault(positiveInt, 60).describe(
    "A new key's request ceiling when none is given and the account's packages set none (a customer's key otherwise gets its packages' rate).",
  ),
  KEY_DEFAULT_CONCURRENCY: withDefault(positiveInt, 4).describe(
    "A new key's concurrency ceiling when none is given and the account's packages set none (a customer's key otherwise gets its packages' concurrency).",
  ),
  KEY_MAX_REQUEST_BYTES: withDefault(positiveInt, 33_554_432).describe(
    'Most `max_request_bytes` a customer may give a key (an admin may set another maximum per account; package plan ceilings bound it further).',
  ),
  KEY_MAX_OUTPUT_TOKENS: withDefault(positiveInt, 131_072).describe(
    'Most output ceiling a customer may give a key.',
  ),
  KEY_MAX_REQUESTS_PER_MINUTE: withDefault(positiveInt, 600).describe(
    'Most request ceiling a customer may give a key.',
  ),
  KEY_MAX_CONCURRENCY: withDefault(positiveInt, 16).describe(
    'Most concurrency ceiling a customer may give a key.',
  ),
  KEYS_PER_ACCOUNT_LIMIT: withDefault(positiveInt, 100).describe('Most inference keys one account may hold.'),

  MANAGEMENT_KEY_REQUESTS_PER_MINUTE: withDefault(positiveInt, 300).describe(
    'Requests per reseller management key per minute; then `rate_limit_exceeded` with `Retry-After`.',
  ),
  MANAGEMENT_KEYS_PER_RESELLER_LIMIT: withDefault(positiveInt, 25).describe(
    'Most live management keys one reseller may hold.',
  ),

  RESERVATION_TIMEOUT_MINUTES: withDefault(positiveInt, 30).describe(
    'A reservation nobody settled is held after this long (reason `settlement_missing`).',
  ),
  HOLD_TIMEOUT_HOURS: withDefault(positiveInt, 24).describe(
    'A held reservation nobody resolved is released after this long.',
  ),
  RECONCILE_INTERVAL_SECONDS: withDefault(positiveInt, 60).describe(
    'How often the reconcilers run (reservations, hot-tier leases, pending payments, overdue orders) and the billing emails are sent.',
  ),
  LOW_BALANCE_EMAIL_CREDITS: withDefault(z.coerce.bigint().min(0n), '1000000').describe(
    'A customer whose credit falls below this many credits gets one low-balance email (until it is at or above it again); `0`: none is sent. Customers can turn it off in their profile.',
  ),
  USAGE_ROLLUP_INTERVAL_SECONDS: withDefault(positiveInt, 60).describe(
    'How often the daily usage rollup behind `/me/usage/summary` is advanced; calls settled since are added live.',
  ),
  USAGE_ROLLUP_LAG_SECONDS: withDefault(z.coerce.number().int().min(0), 60).describe(
    "The rollup's watermark stays this far behind now, and behind the start of every open transaction, so no settlement can commit below it.",
  ),
  RESERVE_OVERRUN_COVER_PERCENT: withDefault(z.coerce.number().int().min(0).max(1000), 10).describe(
    "While an account has reservations open in a pool, a new one must leave this per cent of the pool's reserved total unreserved, as cover for calls that overrun their estimates. `0`: off. One call alone is always admitted.",
  ),
  HOT_TIER: withDefault(bool, 'true').describe(
    "With `REDIS_URL`: reservations are answered from a lease of each account's balances in Redis and finished calls written to Postgres in batches (docs/billing/hot-tier.md). `false`: every reservation is a Postgres transaction.",
  ),
  HOT_LEASE_IDLE_SECONDS: withDefault(positiveInt, 300).describe(
    'A lease no call used for this long is returned to Postgres by the reconciler, and its Redis state dropped.',
  ),
  HOT_WRITE_GRACE_SECONDS: withDefault(positiveInt, 30).describe(
    'A finished call Redis still holds this long after it finished was left by a control plane that stopped; the reconciler writes it to Postgres.',
  ),

  GATEWAY_PUBLIC_URL: withDefault(z.string().url(), 'http://127.0.0.1:8080').describe(
    'Gateway base URL shown in the dashboard\'s "use a key" panel and in `GET /api/v1/status`.',
  ),
  GATEWAY_INTERNAL_URL: optional(z.string().url()).describe(
    "Where the control plane reaches a gateway for an admin's provider test call (the gateway holds the provider credentials). Unset: `GATEWAY_PUBLIC_URL`.",
  ),
  STATUS_GATEWAY_STALE_SECONDS: withDefault(positiveInt, 30).describe(
    'A gateway without a heartbeat this long counts as down on the status page.',
  ),
  STATUS_PROVIDER_WINDOW_MINUTES: withDefault(positiveInt, 5).describe(
    "Upstream outcomes of this many recent minutes decide a provider's state.",
  ),
  STATUS_SAMPLE_INTERVAL_SECONDS: withDefault(positiveInt, 60).describe(
    "How often each component's state is stored for the status history.",
  ),
  STATUS_HISTORY_DAYS: withDefault(positiveInt, 30).describe(
    'Days of history on the status page; older samples are deleted.',
  ),
  DASHBOARD_DIR: optional(z.string()).describe(
    'Folder of the built dashboard served at `/`. Unset: `services/dashboard/dist` of this checkout.',
  ),

  ORDER_TTL_MINUTES: withDefault(positiveInt, 60).describe(
    'An unpaid order expires this long after it was made (its promotion hold returns).',
  ),
  PENDING_ORDERS_PER_ACCOUNT_LIMIT: withDefault(positiveInt, 10).describe(
    'Most unpaid (pending) orders one account may hold at once; one more answers `validation_failed` until one is paid, cancelled or expired.',
  ),
  PAYMENT_PROVIDERS: optional(z.string()).describe(
    "Comma list of `stripe`, `manual`, `development`; the first is an order's default. Unset: `development`, or `manual` when `PUBLIC_URL` is https (where `development` is refused).",
  ),
  RECEIPT_SELLER: optional(z.string().max(1000)).describe(
    'The seller printed on receipts: name, address and tax number, lines separated by `|` (e.g. `Example Ltd|1 Main St, London|VAT GB123456789`). Unset: receipts name no seller.',
  ),
  RECEIPT_TAX_NOTE: optional(z.string().max(500)).describe(
    'The tax line of receipts, e.g. `Prices include VAT at 20%.` Unset: `Tax is not itemised on this receipt.`',
  ),
  STRIPE_SECRET_KEY: optional(z.string()).describe('Stripe secret key (required with `stripe`).'),
  STRIPE_WEBHOOK_SECRET: optional(z.string()).describe(
    'Signing secret of the Stripe webhook endpoint (required with `stripe`).',
  ),
  STRIPE_API_URL: optional(z.string().url()).describe(
    'Another Stripe API address (the tests point it at a local fake).',
  ),
  MANUAL_PAYMENT_INSTRUCTIONS: withDefault(
    z.string(),
    'Pay by bank transfer and quote the order reference; an operator confirms the payment.',
  ).describe('Shown with a manual payment, beside the order reference.'),
  PAYMENT_RECHECK_SECONDS: withDefault(positiveInt, 60).describe(
    'A pending Stripe payment is asked about again by the reconciler at most this often.',
  ),

  SMTP_URL: optional(z.string().url()).describe(
    'SMTP server, e.g. `smtp://user:pass@host:587`. Unset: emails are written to the log (development only).',
  ),
  MAIL_FROM: withDefault(z.string(), 'Tollgate <no-reply@localhost>').describe('Sender of account emails.'),
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
      promotionCodePerAccount: {
        limit: parsed.PROMOTION_CODE_ACCOUNT_LIMIT,
        windowMs: parsed.PROMOTION_CODE_WINDOW_MINUTES * MINUTE,
      },
      promotionCodePerAddress: {
        limit: parsed.PROMOTION_CODE_ADDRESS_LIMIT,
        windowMs: parsed.PROMOTION_CODE_WINDOW_MINUTES * MINUTE,
      },
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
      gatewayInternalUrl: (parsed.GATEWAY_INTERNAL_URL ?? parsed.GATEWAY_PUBLIC_URL).replace(/\/+$/, ''),
      gatewayStaleMs: parsed.STATUS_GATEWAY_STALE_SECONDS * 1000,
      providerWindowMs: parsed.STATUS_PROVIDER_WINDOW_MINUTES * MINUTE,
      sampleIntervalMs: parsed.STATUS_SAMPLE_INTERVAL_SECONDS * 1000,
      historyDays: parsed.STATUS_HISTORY_DAYS,
    },
    managementKeys: {
      rate: { limit: parsed.MANAGEMENT_KEY_REQUESTS_PER_MINUTE, windowMs: MINUTE },
      perResellerLimit: parsed.MANAGEMENT_KEYS_PER_RESELLER_LIMIT,
    },
    lowBalanceEmailCredits: parsed.LOW_BALANCE_EMAIL_CREDITS,
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
    pendingOrdersPerAccount: parsed.PENDING_ORDERS_PER_ACCOUNT_LIMIT,
    providers: names as PaymentProviderId[],
    stripe: {
      secretKey: parsed.STRIPE_SECRET_KEY,
      webhookSecret: parsed.STRIPE_WEBHOOK_SECRET,
      apiUrl: parsed.STRIPE_API_URL,
    },
    manualInstructions: parsed.MANUAL_PAYMENT_INSTRUCTIONS,
    receipt: {
      seller: parsed.RECEIPT_SELLER
        ? parsed.RECEIPT_SELLER.split('|')
            .map((line) => line.trim())
            .filter(Boolean)
        : null,
      taxNote: parsed.RECEIPT_TAX_NOTE ?? 'Tax is not itemised on this receipt.',
    },
    recheckMs: parsed.PAYMENT_RECHECK_SECONDS * 1000,
  };
}
