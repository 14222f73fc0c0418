import { ConfigError, type EnvVariable } from '@tollgate/service-kit';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const DEFAULT_PORT = 8090;
const DEFAULT_HOST = '127.0.0.1';

/**
 * The variables loadConfig reads, as docs/operations/configuration.md shows them (the mock has no
 * zod schema to describe them; config.docs.test.ts fails when the page drifts from this list).
 */
export const MOCK_UPSTREAM_VARIABLES: readonly EnvVariable[] = [
  {
    name: 'MOCK_UPSTREAM_PORT',
    default: String(DEFAULT_PORT),
    accepts: 'integer, 0-65535',
    description: 'Port of the mock provider.',
  },
  {
    name: 'MOCK_UPSTREAM_HOST',
    default: DEFAULT_HOST,
    accepts: 'text',
    description: 'Interface of the mock provider.',
  },
  {
    name: 'MOCK_UPSTREAM_API_KEY',
    default: 'unset',
    accepts: 'text',
    description: "Provider key the mock requires, in each protocol's own header. Unset: any key is accepted.",
  },
  {
    name: 'LOG_LEVEL',
    default: 'info',
    accepts: LOG_LEVELS.map((level) => `\`${level}\``).join(', '),
    description: 'pino log level.',
  },
];

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
  const port = readPort(env.MOCK_UPSTREAM_PORT, DEFAULT_PORT, problems, 'MOCK_UPSTREAM_PORT');
  const logLevel = readOptional(env.LOG_LEVEL) ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')}`);
  if (problems.length > 0) throw new ConfigError('mock-upstream', problems);
  return {
    port,
    host: readOptional(env.MOCK_UPSTREAM_HOST) ?? DEFAULT_HOST,
    /** When set, the mock refuses requests without this provider key. */
    expectedApiKey: readOptional(env.MOCK_UPSTREAM_API_KEY),
    logLevel,
  };
}
