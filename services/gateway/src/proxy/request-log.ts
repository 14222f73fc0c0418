/** What the access log line of one request says; filled in as the request goes. */
export interface RequestLog {
  requestId: string;
  /** W3C trace id: the client's traceparent's, or a new one. */
  traceId?: string;
  method: string;
  path: string;
  keyId?: string;
  alias?: string;
  reservationId?: string;
  /** Time to the response headers; streams log their end separately. */
  ms?: number;
}
