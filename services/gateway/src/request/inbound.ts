import type { IncomingMessage } from 'node:http';
import { readBodyWithLimit, readStreamWithLimit } from './read-body.ts';

/** The headers a handler reads; both Web Headers and a Node request's headers provide it. */
export interface HeaderReader {
  get(name: string): string | null;
}

/**
 * What a handler reads of a client's request, whichever server delivered it: the metered routes
 * are served by Node's own server (no Web Request on the hot path), the others through Hono.
 */
export interface InboundRequest {
  /** Path and query as sent (a full URL through Hono); only the query is ever read from it. */
  readonly url: string;
  readonly headers: HeaderReader;
  /** The socket's peer address (a proxy's, behind one). */
  readonly peer: string | undefined;
  /** Aborts when the client goes away before its answer has been sent. */
  readonly signal: AbortSignal;
  /** The whole body, refused with request_too_large past `limit` bytes. */
  readBody(limit: number): Promise<Buffer>;
}

export function fromWebRequest(request: Request, peer: string | undefined): InboundRequest {
  return {
    url: request.url,
    headers: request.headers,
    peer,
    signal: request.signal,
    readBody: (limit) => readBodyWithLimit(request.body, limit, request.headers.get('content-length')),
  };
}

export function fromNodeRequest(request: IncomingMessage, signal: AbortSignal): InboundRequest {
  const headers: HeaderReader = {
    get(name) {
      const value = request.headers[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(', ') : value;
    },
  };
  return {
    url: request.url ?? '/',
    headers,
    peer: request.socket.remoteAddress,
    signal,
    readBody: (limit) => readStreamWithLimit(request, limit, headers.get('content-length')),
  };
}
