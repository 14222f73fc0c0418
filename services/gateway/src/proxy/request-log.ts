/** What the access log line of one request says; filled in as the request goes. */
export interface RequestLog {
  requestId: string;
  method: string;
  path: string;
  keyId?: string;
  alias?: string;
  reservationId?: string;
  /** Time to the response headers; streams log their end separately. */
  ms?: number;
}
