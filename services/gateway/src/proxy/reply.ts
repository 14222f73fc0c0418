import type { PipedStream, StreamSink } from '../upstream/relay-stream.ts';

/**
 * A metered call's answer as the gateway's server writes it: a whole body, or a stream relayed
 * as it arrives. Only these headers reach the client; provider headers never do.
 */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string | StreamBody;
}

/** A relayed stream, written by the server straight into the client's response. */
export interface StreamBody {
  pipe(sink: StreamSink): PipedStream;
}
