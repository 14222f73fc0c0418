import { blankToUndefined, parseEnv } from '@tollgate/service-kit';
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
  CATALOG_FILE: optional(z.string()),
  /** Prometheus /metrics on a port of its own; unset: no metrics are kept or served. */
  METRICS_PORT: optional(port),
  METRICS_HOST: withDefault(z.string(), '127.0.0.1'),
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
  KEYS_PER_ACCOUNT_LIMIT: withDefault(positiveInt, 100),

  // Billing: how long a reservation or a hold may stay open before the reconciler releases it.
  RESERVATION_TIMEOUT_MINUTES: withDefault(positiveInt, 30),
  HOLD_TIMEOUT_HOURS: withDefault(positiveInt, 24),
  RECONCILE_INTERVAL_SECONDS: withDefault(positiveInt, 60),

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
    dataDir: parsed.DATA_DIR,
    redisUrl: parsed.REDIS_URL,
    redisCluster: parsed.REDIS_CLUSTER,
    redisKeyPrefix: parsed.REDIS_KEY_PREFIX,
    internalTokenSecret: parsed.INTERNAL_TOKEN_SECRET,
    keyPepper: parsed.KEY_PEPPER,
    keyEncryptionKey: Buffer.from(parsed.KEY_ENCRYPTION_KEY, 'hex'),
    catalogFile: parsed.CATALOG_FILE,
    logLevel: parsed.LOG_LEVEL,
    metrics:
      parsed.METRICS_PORT === undefined
        ? undefined
        : { port: parsed.METRICS_PORT, host: parsed.METRICS_HOST },
    publicUrl: parsed.PUBLIC_URL,
    trustProxy: parsed.TRUST_PROXY,
    sessions: {
      idleTimeoutMs: parsed.SESSION_IDLE_TIMEOUT_MINUTES * MINUTE,
      absoluteTimeoutMs: parsed.SESSION_ABSOLUTE_TIMEOUT_HOURS * 60 * MINUTE,
    },
    emailCodes: {
      registerTtlMs: parsed.REGISTER_CODE_TTL_MINUTES * MINUTE,
      registerMaxAttempts: parsed.REGISTER_CODE_MAX_ATTEMPTS,
      resetTtlMs: parsed.PASSWORD_RESET_TTL_MINUTES * MINUTE,
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
    keysPerAccountLimit: parsed.KEYS_PER_ACCOUNT_LIMIT,
    billing: {
      reservationTimeoutMs: parsed.RESERVATION_TIMEOUT_MINUTES * MINUTE,
      holdTimeoutMs: parsed.HOLD_TIMEOUT_HOURS * 60 * MINUTE,
      reconcileIntervalMs: parsed.RECONCILE_INTERVAL_SECONDS * 1000,
    },
    /** The environment, for `${NAME}` references in the catalogue file. */
    env,
    smtpUrl: parsed.SMTP_URL,
    mailFrom: parsed.MAIL_FROM,
  };
}
