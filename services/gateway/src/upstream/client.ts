import { AppError } from '@tollgate/errors';
import { Agent } from 'undici';

/** The provider's answer as it arrived: status, headers, and the body still to be read. */
export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Read it exactly once. Breaking out of the iteration early closes the upstream connection. */
  body: AsyncIterable<Buffer>;
}

export interface UpstreamSendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The client's abort signal: a client that leaves aborts the upstream request with it. */
  signal: AbortSignal;
}

export interface UpstreamClient {
  /**
   * POSTs one request. Resolves with any status (classifying it is the relay's job); rejects
   * only with AppError: `client_disconnected` when `signal` aborted, else `upstream_unavailable`
   * (refused, reset, DNS, TLS, connect or headers timeout). The message never names the host.
   */
  send(request: UpstreamSendRequest): Promise<UpstreamResponse>;
  close(): Promise<void>;
}

export interface UpstreamClientOptions {
  connectTimeoutMs: number;
  /** Longest wait for response headers (a non-streamed answer arrives whole after it). */
  headersTimeoutMs: number;
  /** Longest silence between two chunks of a response body. */
  bodyTimeoutMs: number;
  /** How long an idle pooled connection stays open; providers' own hints may shorten it. */
  keepAliveTimeoutMs?: number;
}

const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 30_000;

/** The transport failure as the client may see it: a catalogue code, the cause kept for logs. */
export function toTransportError(error: unknown, signal: AbortSignal): AppError {
  if (error instanceof AppError) return error;
  if (signal.aborted) return new AppError('client_disconnected', { cause: error });
  return new AppError('upstream_unavailable', { cause: error });
}

/**
 * The UTF-8 bytes of a text in memory of their own. Buffer.from takes texts under 32 KiB from a
 * shared 64 KiB pool, and a slice kept for a stream's life keeps its whole pool block alive.
 */
export function ownBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

/**
 * One undici Agent for every provider: it keeps a keep-alive pool per origin, so connections
 * (and TLS sessions) are reused across requests and providers never share sockets.
 */
export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const agent = new Agent({
    connectTimeout: options.connectTimeoutMs,
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: options.bodyTimeoutMs,
    keepAliveTimeout: options.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
  });
  return {
    async send(request) {
      try {
        const url = new URL(request.url);
        const response = await agent.request({
          origin: url.origin,
          path: url.pathname + url.search,
          method: 'POST',
          headers: request.headers,
          // As bytes: undici keeps the body it was given for the whole response (a stream's whole
          // life), and of a string it keeps that string and its own encoded copy.
          body: ownBytes(request.body),
          signal: request.signal,
        });
        return { status: response.statusCode, headers: response.headers, body: response.body };
      } catch (error) {
        throw toTransportError(error, request.signal);
      }
    },
    close() {
      return agent.close();
    },
  };
}
