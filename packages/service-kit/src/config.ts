import type { z } from 'zod';

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
