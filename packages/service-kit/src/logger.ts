import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

/** Object paths whose values never reach a log line. */
const REDACT_PATHS = [
  'password',
  'currentPassword',
  'newPassword',
  'secret',
  'token',
  'apiKey',
  'authorization',
  'cookie',
  '*.password',
  '*.currentPassword',
  '*.newPassword',
  '*.secret',
  '*.token',
  '*.apiKey',
  '*.authorization',
  '*.cookie',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["set-cookie"]',
  '*.headers["x-api-key"]',
  'headers.authorization',
  'headers.cookie',
  'headers["set-cookie"]',
  'headers["x-api-key"]',
];

/** Inference keys, management keys and bearer values that slipped into free text. */
const SECRET_PATTERNS: Array<[RegExp, string]> = [
  [/\bsk-[A-Za-z0-9_-]{6,}/g, 'sk-[redacted]'],
  [/\btgm_[A-Za-z0-9_-]{6,}/g, 'tgm_[redacted]'],
  [/(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi, '$1[redacted]'],
];

export function scrubSecrets(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

export interface LoggerOptions {
  name: string;
  level?: string;
  /** Where lines go; stdout by default. Tests pass a capturing stream. */
  destination?: DestinationStream;
}

/** A pino JSON logger that redacts secrets at the logger, whatever the caller passes. */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      name: options.name,
      level: options.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      hooks: {
        logMethod(args, method) {
          const scrubbed = args.map((arg) => (typeof arg === 'string' ? scrubSecrets(arg) : arg));
          method.apply(this, scrubbed as Parameters<typeof method>);
        },
      },
      formatters: {
        log(object) {
          // Error messages and free-text fields can carry a key pasted by a user.
          for (const [field, value] of Object.entries(object)) {
            if (typeof value === 'string') object[field] = scrubSecrets(value);
          }
          return object;
        },
      },
    },
    options.destination,
  );
}
