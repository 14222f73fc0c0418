import type { AppError } from '@tollgate/errors';
import type { Logger } from '@tollgate/service-kit';
import type { GatewayMetrics } from '../metrics/metrics.ts';
import { CREDENTIAL_REFUSED } from '../upstream/upstream-status.ts';

/** The transport error codes worth telling apart when a provider cannot be reached. */
const TRANSPORT_REASONS: Array<[RegExp, string]> = [
  [/^(ENOTFOUND|EAI_AGAIN|EAI_NONAME)$/, 'dns'],
  [/^ECONNREFUSED$/, 'connection_refused'],
  [/^(ECONNRESET|EPIPE|UND_ERR_SOCKET|UND_ERR_CLOSED)$/, 'connection_reset'],
  [/^UND_ERR_CONNECT_TIMEOUT$/, 'connect_timeout'],
  [/^UND_ERR_HEADERS_TIMEOUT$/, 'headers_timeout'],
  [/^UND_ERR_BODY_TIMEOUT$/, 'body_timeout'],
  [/^(EHOSTUNREACH|ENETUNREACH)$/, 'unreachable'],
  [/CERT|TLS|SSL|SELF_SIGNED/, 'tls'],
];

/** The first error code found along a cause chain (undici nests the socket error). */
function causeCode(error: unknown): string | null {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'upstream_unavailable' && code !== 'client_disconnected')
      return code;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/** Why a provider call failed, in words an operator can act on; never sent to the client. */
function upstreamFailureReason(error: AppError, upstreamStatus?: number): string {
  // A provider that refuses its key with another status (Gemini's 400 API_KEY_INVALID) says so.
  if (causeCode(error.cause) === CREDENTIAL_REFUSED) return 'credential_refused';
  if (upstreamStatus !== undefined && upstreamStatus >= 300) {
    if (upstreamStatus === 401 || upstreamStatus === 403 || upstreamStatus === 407)
      return 'credential_refused';
    if (upstreamStatus === 429) return 'rate_limited';
    if (upstreamStatus >= 500) return 'provider_error';
    return 'request_refused';
  }
  const code = causeCode(error.cause);
  if (code) {
    for (const [pattern, reason] of TRANSPORT_REASONS) if (pattern.test(code)) return reason;
    return code.toLowerCase();
  }
  if (error.code === 'upstream_invalid_response') return 'invalid_response';
  return 'stream_failed';
}

/** The provider refused our credential (401/403/407, or a refusal its adapter recognised). */
export function isCredentialRefusal(error: AppError, upstreamStatus?: number): boolean {
  return upstreamFailureReason(error, upstreamStatus) === 'credential_refused';
}

/**
 * One warn line per failed provider call with the provider id and the reason (wrong provider
 * key, DNS, refused, TLS, timeout, 5xx...), counted by the same cause in the metrics. The
 * client's body only ever carries the code.
 */
export function logUpstreamFailure(
  deps: { logger: Logger; metrics?: GatewayMetrics },
  providerId: string,
  error: AppError,
  upstreamStatus?: number,
  context: object = {},
): void {
  const reason = upstreamFailureReason(error, upstreamStatus);
  deps.metrics?.upstreamFailure(providerId, reason);
  deps.logger.warn(
    {
      ...context,
      providerId,
      code: error.code,
      reason,
      ...(upstreamStatus === undefined ? {} : { upstreamStatus }),
    },
    'upstream call failed',
  );
}
