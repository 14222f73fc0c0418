/**
 * A metered call's answer as the gateway's server writes it: a whole body, or a stream relayed
 * as it arrives. Only these headers reach the client; provider headers never do.
 */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string | ReadableStream<Uint8Array>;
}
