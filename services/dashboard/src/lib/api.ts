/**
 * What the typed client (client.ts) builds on: the error the dashboard shows for a failed call,
 * and the CSRF cookie it reads. Every call goes through the typed client.
 */

export type FieldErrors = Record<string, string[]>;

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly fieldErrors: FieldErrors;
  readonly retryAfter: number | null;

  constructor(
    status: number,
    code: string,
    message: string,
    fieldErrors: FieldErrors,
    retryAfter: number | null,
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.fieldErrors = fieldErrors;
    this.retryAfter = retryAfter;
  }
}

/**
 * Whether this browser holds a session: the readable CSRF cookie is set and cleared with the
 * HttpOnly session cookie, with the same lifetime. Without it a visitor is signed out, and asking
 * GET /me would only log a failed (401) request in the console.
 */
export function mayHaveSession(): boolean {
  return csrfToken() !== null;
}

export function csrfToken(): string | null {
  for (const part of document.cookie.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === 'tollgate_csrf' || name === '__Host-tollgate_csrf')
      return decodeURIComponent(rest.join('='));
  }
  return null;
}

export function unreachable(): ApiError {
  return new ApiError(
    0,
    'network_unreachable',
    'The service could not be reached. Check your connection and try again.',
    {},
    null,
  );
}

/**
 * A failed answer as an ApiError: the service's own code when the body has one; otherwise the
 * client-classified codes, endpoint_unavailable for a 404 or 501 (a route this service does not
 * publish, e.g. an older control plane behind the dashboard) and unknown_error for anything else.
 */
export function failureOf(status: number, parsed: unknown, retryAfter: string | null): ApiError {
  const error = (parsed !== null && typeof parsed === 'object' ? parsed : {}) as {
    message?: unknown;
    code?: unknown;
    errors?: FieldErrors;
  };
  const retry = Number(retryAfter);
  const retrySeconds = Number.isFinite(retry) && retry > 0 ? retry : null;
  if (typeof error.code === 'string' && error.code !== '') {
    const message = typeof error.message === 'string' ? error.message : `The request failed (${status}).`;
    return new ApiError(status, error.code, message, error.errors ?? {}, retrySeconds);
  }
  if (status === 404 || status === 501) {
    return new ApiError(
      status,
      'endpoint_unavailable',
      'This part of the service is not available yet.',
      {},
      null,
    );
  }
  return new ApiError(status, 'unknown_error', `The request failed (${status}).`, {}, retrySeconds);
}
