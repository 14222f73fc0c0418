import { ConfigError } from '@tollgate/service-kit';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function readPort(value: string | undefined, fallback: number, problems: string[], name: string): number {
  if (value === undefined || value.trim() === '') return fallback;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push(`${name}: must be a port (0-65535)`);
  return port;
}

function readOptional(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/**
 * Settings of the mock provider, read once from the environment. Only this file reads
 * process.env. Written without zod so the mock stays dependency-free.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const problems: string[] = [];
  const port = readPort(env.MOCK_UPSTREAM_PORT, 8090, problems, 'MOCK_UPSTREAM_PORT');
  const logLevel = readOptional(env.LOG_LEVEL) ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')}`);
  if (problems.length > 0) throw new ConfigError('mock-upstream', problems);
  return {
    port,
    host: readOptional(env.MOCK_UPSTREAM_HOST) ?? '127.0.0.1',
    /** When set, the mock refuses requests without this provider key. */
    expectedApiKey: readOptional(env.MOCK_UPSTREAM_API_KEY),
    logLevel,
  };
}
