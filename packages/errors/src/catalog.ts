/**
 * The one catalogue of error codes. Every status a code is answered with comes from here;
 * no other file writes a status for a code.
 *
 * `type` is the coarse, upstream-style classification shown in gateway bodies
 * (the same words the two upstream protocols use).
 */

export const ERROR_TYPES = [
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'billing_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'overloaded_error',
  'api_connection_error',
] as const;
export type ErrorType = (typeof ERROR_TYPES)[number];

export type Origin = 'control-plane' | 'gateway' | 'both' | 'client';

export interface CodeEntry {
  /** Default HTTP status. `null` for client-classified codes that never travel on the wire. */
  readonly status: number | null;
  /** Every status docs/behaviour.md allows for the code; `status` is the one this service sends. */
  readonly allowedStatuses: readonly number[] | 'any-4xx' | 'any-5xx' | 'any';
  readonly retryable: boolean;
  readonly type: ErrorType;
  readonly origin: Origin;
  /** Default human text. Wording may change; clients branch on the code. */
  readonly message: string;
  /** True for the few codes this service adds to those of the product specification. */
  readonly extension?: true;
}

export const ERROR_CATALOG = {
  // Control plane (several also occur on the gateway).
  validation_failed: {
    status: 422,
    allowedStatuses: [422],
    retryable: false,
    type: 'invalid_request_error',
    origin: 'control-plane',
    message: 'The request body failed validation.',
  },
  unauthenticated: {
    status: 401,
    allowedStatuses: [401],
    retryable: false,
    type: 'authentication_error',
    origin: 'control-plane',
    message: 'Sign in to continue.',
  },
  // 401 or 419 would do. We answer 401: every HTTP client knows it, 419 is not registered.
  session_expired: {
    status: 401,
    allowedStatuses: [401, 419],
    retryable: false,
    type: 'authentication_error',
    origin: 'control-plane',
    message: 'Your session has ended. Sign in again.',
  },
  forbidden: {
    status: 403,
    allowedStatuses: [403],
    retryable: false,
    type: 'permission_error',
    origin: 'control-plane',
    message: 'You do not have permission to do this.',
  },
  account_suspended: {
    status: 403,
    allowedStatuses: [403],
    retryable: false,
    type: 'permission_error',
    origin: 'both',
    message: 'This account is suspended.',
  },
  not_found: {
    status: 404,
    allowedStatuses: [404],
    retryable: false,
    type: 'not_found_error',
    origin: 'both',
    message: 'Not found.',
  },
  rate_limit_exceeded: {
    status: 429,
    allowedStatuses: [429],
    retryable: true,
    type: 'rate_limit_error',
    origin: 'both',
    message: 'Rate limit exceeded. Retry after the time given in Retry-After.',
  },
  insufficient_tokens: {
    status: 402,
    allowedStatuses: [402],
    retryable: false,
    type: 'billing_error',
    origin: 'both',
    message: 'No remaining token quota on any usable entitlement for this model.',
  },
  insufficient_credits: {
    status: 402,
    allowedStatuses: [402],
    retryable: false,
    type: 'billing_error',
    origin: 'both',
    message: 'Not enough credit balance for this request.',
  },
  payment_pending: {
    status: 402,
    allowedStatuses: [402],
    retryable: true,
    type: 'billing_error',
    origin: 'control-plane',
    message: 'The payment for this order is not confirmed yet.',
  },
  // 402 or 422 would do. We answer 402: the order stays unpaid, as with payment_pending.
  payment_verification_failed: {
    status: 402,
    allowedStatuses: [402, 422],
    retryable: false,
    type: 'billing_error',
    origin: 'control-plane',
    message: 'The payment could not be verified.',
  },
  server_error: {
    status: 500,
    allowedStatuses: 'any-5xx',
    retryable: true,
    type: 'api_error',
    origin: 'both',
    message: 'Something went wrong on our side. Please retry.',
  },

  // Gateway.
  invalid_api_key: {
    status: 401,
    allowedStatuses: [401],
    retryable: false,
    type: 'authentication_error',
    origin: 'gateway',
    message:
      'This API key is not recognised: it may be mistyped, or replaced by a rotation (the old secret ' +
      'stops at once). Send the current key in x-api-key or Authorization: Bearer.',
  },
  conflicting_api_keys: {
    status: 401,
    allowedStatuses: [401],
    retryable: false,
    type: 'authentication_error',
    origin: 'gateway',
    message: 'x-api-key and Authorization carry different keys. Send one key.',
  },
  api_key_disabled: {
    status: 403,
    allowedStatuses: [403],
    retryable: false,
    type: 'permission_error',
    origin: 'gateway',
    message: 'This API key is disabled.',
  },
  api_key_revoked: {
    status: 403,
    allowedStatuses: [403],
    retryable: false,
    type: 'permission_error',
    origin: 'gateway',
    message: 'This API key has been revoked.',
  },
  api_key_expired: {
    status: 403,
    allowedStatuses: [403],
    retryable: false,
    type: 'permission_error',
    origin: 'gateway',
    message: 'This API key has expired.',
  },
  model_not_allowed: {
    status: 403,
    allowedStatuses: [403],
    retryable: false,
    type: 'permission_error',
    origin: 'gateway',
    message: 'This key may not call this model.',
  },
  model_unavailable: {
    status: 400,
    allowedStatuses: [400],
    retryable: false,
    type: 'invalid_request_error',
    origin: 'gateway',
    message: 'This model is not available on this endpoint.',
  },
  invalid_model: {
    status: 400,
    allowedStatuses: [400],
    retryable: false,
    type: 'invalid_request_error',
    origin: 'gateway',
    message: 'model is missing or is not a known model.',
  },
  unsupported_parameter: {
    status: 400,
    allowedStatuses: [400],
    retryable: false,
    type: 'invalid_request_error',
    origin: 'gateway',
    message: 'The request has a parameter this endpoint does not accept.',
  },
  invalid_max_output_tokens: {
    status: 400,
    allowedStatuses: [400],
    retryable: false,
    type: 'invalid_request_error',
    origin: 'gateway',
    message: 'The maximum output field must be a positive integer.',
  },
  max_output_tokens_exceeded: {
    status: 400,
    allowedStatuses: [400],
    retryable: false,
    type: 'invalid_request_error',
    origin: 'gateway',
    message: 'More output was requested than this key permits.',
  },
  request_too_large: {
    status: 413,
    allowedStatuses: [413],
    retryable: false,
    type: 'request_too_large',
    origin: 'gateway',
    message: 'The request body is too large.',
  },
  concurrency_limit_exceeded: {
    status: 429,
    allowedStatuses: [429],
    retryable: true,
    type: 'rate_limit_error',
    origin: 'gateway',
    message: 'Too many requests in flight for this key. Retry shortly.',
  },
  rate_limiter_unavailable: {
    status: 503,
    allowedStatuses: [503],
    retryable: true,
    type: 'api_error',
    origin: 'gateway',
    message: 'The rate limiter is unavailable; the request was refused and nothing was metered.',
  },
  billing_unavailable: {
    status: 503,
    allowedStatuses: [503],
    retryable: true,
    type: 'api_error',
    origin: 'gateway',
    message: 'Billing is unavailable; the request was refused and nothing was spent.',
  },
  // Status is the provider's own 4xx; see AppError.upstreamRejected.
  upstream_rejected: {
    status: 400,
    allowedStatuses: 'any-4xx',
    retryable: false,
    type: 'invalid_request_error',
    origin: 'gateway',
    message: 'The model provider refused the request. Nothing was charged.',
  },
  upstream_unavailable: {
    status: 503,
    allowedStatuses: [503],
    retryable: true,
    type: 'overloaded_error',
    origin: 'gateway',
    message: 'The model provider is unavailable, over capacity or too slow. Nothing was charged.',
  },
  upstream_invalid_response: {
    status: 502,
    allowedStatuses: [502],
    retryable: true,
    type: 'api_error',
    origin: 'gateway',
    message: 'The model provider returned an invalid response. Nothing was charged as used.',
  },
  billing_settlement_pending: {
    status: 502,
    allowedStatuses: [502],
    retryable: true,
    type: 'api_error',
    origin: 'gateway',
    message:
      'The response carried no usage figures; it is held for reconciliation, not billed as an estimate.',
  },
  client_disconnected: {
    status: 499,
    allowedStatuses: [499],
    retryable: false,
    type: 'invalid_request_error',
    origin: 'gateway',
    message: 'The client closed the connection early. Nothing was charged.',
  },
  // Extension: a gateway body that is not a JSON object, for which the specification names no code.
  invalid_request: {
    status: 400,
    allowedStatuses: [400],
    retryable: false,
    type: 'invalid_request_error',
    origin: 'gateway',
    message: 'The request body must be a JSON object.',
    extension: true,
  },

  // Extension: a gateway path (or method) that does not exist. The spec names no code for it;
  // not_found is the control plane's, about records.
  unknown_route: {
    status: 404,
    allowedStatuses: [404],
    retryable: false,
    type: 'not_found_error',
    origin: 'gateway',
    message:
      'There is no such endpoint. The gateway serves /v1/messages, /v1/messages/count_tokens, /v1/chat/completions, /v1/responses, /v1/models, /v1/key/status and /v1/key/usage/{request_id}.',
    extension: true,
  },

  // Extension: a WebSocket upgrade on /v1/responses (Codex tries one first). 426 tells the client
  // to use plain HTTP at once, where 404 makes Codex retry before falling back.
  websocket_not_supported: {
    status: 426,
    allowedStatuses: [426],
    retryable: false,
    type: 'invalid_request_error',
    origin: 'gateway',
    message:
      'The gateway serves /v1/responses over HTTP only: send it as a POST, without a WebSocket upgrade.',
    extension: true,
  },

  // Client-classified: produced by our own clients, never sent by a server.
  network_unreachable: {
    status: null,
    allowedStatuses: 'any',
    retryable: true,
    type: 'api_connection_error',
    origin: 'client',
    message: 'The request never reached the service. Nothing was metered.',
  },
  endpoint_unavailable: {
    status: null,
    allowedStatuses: [404, 501],
    retryable: false,
    type: 'not_found_error',
    origin: 'client',
    message: 'This endpoint is not available yet.',
  },
  unknown_error: {
    status: null,
    allowedStatuses: 'any',
    retryable: false,
    type: 'api_error',
    origin: 'client',
    message: 'The service answered without a recognised error code.',
  },
} as const satisfies Record<string, CodeEntry>;

export type ErrorCode = keyof typeof ERROR_CATALOG;
/** Codes a server may send (client-classified ones excluded). */
export type ServerErrorCode = {
  [K in ErrorCode]: (typeof ERROR_CATALOG)[K]['origin'] extends 'client' ? never : K;
}[ErrorCode];

export const ERROR_CODES = Object.keys(ERROR_CATALOG) as ErrorCode[];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CATALOG, value);
}

export function describeCode(code: ErrorCode): CodeEntry {
  return ERROR_CATALOG[code];
}

/** Whether a status is one docs/behaviour.md allows for the code. */
export function isAllowedStatus(code: ErrorCode, status: number): boolean {
  const allowed = ERROR_CATALOG[code].allowedStatuses;
  if (allowed === 'any') return true;
  if (allowed === 'any-4xx') return status >= 400 && status <= 499;
  if (allowed === 'any-5xx') return status >= 500 && status <= 599;
  return (allowed as readonly number[]).includes(status);
}
