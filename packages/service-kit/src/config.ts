import { z } from 'zod';
import type { ServerLimits } from './serve.ts';

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(service: string, problems: string[]) {
    super(`${service}: invalid configuration\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/**
 * Parses environment variables with a zod schema. Every problem is listed at once, by variable
 * name, without echoing values (they may be secrets).
 */
export function parseEnv<Schema extends z.ZodType>(
  service: string,
  schema: Schema,
  env: Record<string, string | undefined>,
): z.infer<Schema> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const variable = issue.path.map(String).join('.') || '(environment)';
    return `${variable}: ${issue.message}`;
  });
  throw new ConfigError(service, problems);
}

/** Blank strings count as unset, so `FOO=` in an env file falls back to the default. */
export function blankToUndefined(value: unknown): unknown {
  return typeof value === 'string' && value.trim() === '' ? undefined : value;
}

const positiveInt = z.coerce.number().int().positive();
const withDefault = <T extends z.ZodType>(schema: T, fallback: z.input<T>) =>
  z.preprocess(blankToUndefined, schema.default(fallback as never));

/** The HTTP server limits both services take from the environment (docs/operations/configuration.md). */
export const HttpServerEnv = {
  HTTP_HEADERS_TIMEOUT_MS: withDefault(positiveInt, 10_000).describe(
    "Longest time to receive a request's headers; a slower client gets 408 and is cut off.",
  ),
  HTTP_REQUEST_TIMEOUT_MS: withDefault(positiveInt, 60_000).describe(
    'Longest time to receive a whole request (not to answer it: streams are unaffected).',
  ),
  HTTP_IDLE_TIMEOUT_MS: withDefault(positiveInt, 65_000).describe(
    'How long an idle keep-alive connection stays open.',
  ),
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: withDefault(z.coerce.number().int().min(0), 256).describe(
    'Connections one client address (an IPv6 /64) may hold at once on the public port; more are closed on arrival. `0`: no cap. Behind a proxy or load balancer every connection comes from it: cap per client there and set `0` here. The internal billing port is never capped.',
  ),
};

export function serverLimitsOf(parsed: {
  HTTP_HEADERS_TIMEOUT_MS: number;
  HTTP_REQUEST_TIMEOUT_MS: number;
  HTTP_IDLE_TIMEOUT_MS: number;
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: number;
}): ServerLimits {
  return {
    headersTimeoutMs: parsed.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: parsed.HTTP_REQUEST_TIMEOUT_MS,
    idleTimeoutMs: parsed.HTTP_IDLE_TIMEOUT_MS,
    maxConnectionsPerAddress: parsed.HTTP_MAX_CONNECTIONS_PER_ADDRESS,
  };
}
