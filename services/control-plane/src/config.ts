import { blankToUndefined, parseEnv } from '@tollgate/service-kit';
import { z } from 'zod';

const optional = <T extends z.ZodType>(schema: T) => z.preprocess(blankToUndefined, schema.optional());
const withDefault = <T extends z.ZodType>(schema: T, fallback: z.input<T>) =>
  z.preprocess(blankToUndefined, schema.default(fallback as never));
const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
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
  REDIS_KEY_PREFIX: withDefault(z.string(), 'tollgate:'),
  INTERNAL_TOKEN_SECRET: z.string({ error: 'is required' }).min(32, 'must be at least 32 characters'),
  KEY_PEPPER: z.string({ error: 'is required' }).min(32, 'must be at least 32 characters'),
  KEY_ENCRYPTION_KEY: z
    .string({ error: 'is required' })
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 32 bytes as 64 hex characters'),
  CATALOG_FILE: optional(z.string()),
  LOG_LEVEL: withDefault(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info'),
  /** Behind a TLS-terminating proxy: cookies get Secure and the __Host- prefix. */
  PUBLIC_URL: optional(z.string().url()),
  TRUST_PROXY: withDefault(bool, 'false'),
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
    redisKeyPrefix: parsed.REDIS_KEY_PREFIX,
    internalTokenSecret: parsed.INTERNAL_TOKEN_SECRET,
    keyPepper: parsed.KEY_PEPPER,
    keyEncryptionKey: Buffer.from(parsed.KEY_ENCRYPTION_KEY, 'hex'),
    catalogFile: parsed.CATALOG_FILE,
    logLevel: parsed.LOG_LEVEL,
    publicUrl: parsed.PUBLIC_URL,
    trustProxy: parsed.TRUST_PROXY,
  };
}
