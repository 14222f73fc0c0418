import { ERROR_CATALOG, type ErrorType, isAllowedStatus, type ServerErrorCode } from './catalog.ts';

export type FieldErrors = Record<string, string[]>;

export interface AppErrorOptions {
  /** Human text; defaults to the catalogue's. Never put secrets, hosts or stack traces here. */
  message?: string;
  /** Field name -> problems (validation_failed only). */
  fieldErrors?: FieldErrors;
  /** Seconds for Retry-After, on the codes whose Retry-After a client honours (docs/behaviour.md). */
  retryAfterSeconds?: number;
  /** Further response headers that describe the refusal (the gateway's x-ratelimit-*). */
  headers?: Record<string, string>;
  cause?: unknown;
}

/**
 * The one error type domain code throws. It carries a catalogue code; the status comes from the
 * catalogue, except where docs/behaviour.md leaves it to the provider (see `upstreamRejected`).
 */
export class AppError extends Error {
  readonly code: ServerErrorCode;
  readonly status: number;
  readonly type: ErrorType;
  readonly retryable: boolean;
  readonly fieldErrors: FieldErrors | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ServerErrorCode, options: AppErrorOptions = {}, status?: number) {
    const entry = ERROR_CATALOG[code];
    super(
      options.message ?? entry.message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'AppError';
    this.code = code;
    const chosen = status ?? entry.status;
    if (chosen === null || !isAllowedStatus(code, chosen)) {
      throw new TypeError(`status ${String(chosen)} is not allowed for ${code}`);
    }
    this.status = chosen;
    this.type = entry.type;
    this.retryable = entry.retryable;
    this.fieldErrors = options.fieldErrors;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.headers = options.headers;
  }

  /** upstream_rejected carries the provider's own 4xx status. */
  static upstreamRejected(providerStatus: number, options: AppErrorOptions = {}): AppError {
    const error = new AppError('upstream_rejected', options, providerStatus);
    return Object.assign(error, { type: upstreamRejectedType(providerStatus) });
  }

  static validation(fieldErrors: FieldErrors, message?: string): AppError {
    return new AppError('validation_failed', { fieldErrors, ...(message ? { message } : {}) });
  }
}

function upstreamRejectedType(status: number): ErrorType {
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  return 'invalid_request_error';
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}

/** Anything thrown becomes an AppError; unknown failures become a bare server_error. */
export function toAppError(value: unknown): AppError {
  if (value instanceof AppError) return value;
  return new AppError('server_error', { cause: value });
}
