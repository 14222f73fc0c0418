import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MeteredSurface } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import { handleMetered } from '../proxy/metered.ts';
import type { Reply, StreamBody } from '../proxy/reply.ts';
import { fromNodeRequest } from '../request/inbound.ts';
import { type ErrorStyle, startCycle } from './request-cycle.ts';

const METERED_ROUTES: ReadonlyMap<string, { surface: MeteredSurface; style: ErrorStyle }> = new Map([
  ['/v1/messages', { surface: 'messages', style: 'messages' }],
  ['/v1/chat/completions', { surface: 'chat_completions', style: 'openai' }],
  ['/v1/responses', { surface: 'responses', style: 'openai' }],
]);

/** What is left of a refused body is read and dropped up to this much, then the socket is closed. */
const DRAIN_MAX_BYTES = 64 * 1024 * 1024;
const DRAIN_MAX_MS = 500;

/**
 * The metered routes, served straight from Node's HTTP server: they are most of the traffic, and
 * the Web Request/Response adaptation cost more CPU per call than routing and error rendering
 * together. Returns false for any other request (Hono serves those).
 */
export function createMeteredRoutes(
  deps: GatewayDependencies,
): (request: IncomingMessage, response: ServerResponse) => boolean {
  return (request, response) => {
    if (request.method !== 'POST' || request.url === undefined) return false;
    const query = request.url.indexOf('?');
    const path = query === -1 ? request.url : request.url.slice(0, query);
    const route = METERED_ROUTES.get(path);
    if (!route) return false;
    serve(deps, route.surface, route.style, path, request, response).catch((error: unknown) => {
      deps.logger.error({ err: error, path }, 'unhandled error');
      response.destroy();
    });
    return true;
  };
}

async function serve(
  deps: GatewayDependencies,
  surface: MeteredSurface,
  style: ErrorStyle,
  path: string,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const client = new AbortController();
  const inbound = fromNodeRequest(request, client.signal);
  const cycle = startCycle(deps, 'POST', path, inbound.headers.get('traceparent'), style);
  response.once('close', () => {
    if (!response.writableFinished) client.abort();
  });
  let reply: Reply;
  let code: string | undefined;
  try {
    reply = await cycle.run(() => handleMetered(deps, inbound, surface, cycle.log));
  } catch (error) {
    const failure = cycle.fail(error);
    code = failure.code;
    reply = {
      status: failure.status,
      headers: { 'content-type': 'application/json', ...failure.headers },
      body: JSON.stringify(failure.body),
    };
  }
  cycle.end(reply.status, code);
  if (!request.complete) response.once('finish', () => drainOrDrop(request));
  const firstByte = () => deps.metrics?.firstByte(path, performance.now() - cycle.started);
  const headers: Record<string, string> = { ...reply.headers, 'x-request-id': cycle.log.requestId };
  if (typeof reply.body === 'string') {
    headers['content-length'] = String(Buffer.byteLength(reply.body));
    response.writeHead(reply.status, headers);
    response.end(reply.body);
    firstByte();
    return;
  }
  response.writeHead(reply.status, headers);
  response.flushHeaders();
  await relay(reply.body, response, firstByte, deps.config.streamClientStallMs);
}

/**
 * Writes a relayed stream as it arrives, at the pace the client reads: a write the socket cannot
 * take at once pauses the upstream until 'drain', so a slow client holds a bounded buffer. One
 * that takes nothing for `stallMs` is cut off, and the relay ends as for a client that left. A
 * client that leaves cancels the relay.
 */
function relay(
  body: StreamBody,
  response: ServerResponse,
  firstByte: () => void,
  stallMs: number,
): Promise<void> {
  return new Promise((resolve) => {
    let first = true;
    // Armed only while a write waits for the client: a stream that flows sets no timer at all.
    let stall: ReturnType<typeof setTimeout> | undefined;
    const leave = () => {
      clearTimeout(stall);
      response.off('drain', resume);
      piped.cancel();
      resolve();
    };
    const resume = () => {
      clearTimeout(stall);
      stall = undefined;
      piped.resume();
    };
    const piped = body.pipe({
      write(bytes) {
        if (response.destroyed) return false;
        if (first) {
          first = false;
          firstByte();
        }
        if (response.write(bytes)) return true;
        if (stall === undefined) {
          stall = setTimeout(() => response.destroy(), stallMs);
          stall.unref();
        }
        return false;
      },
      end() {
        response.off('close', leave);
        response.off('drain', resume);
        if (!response.destroyed) response.end();
        // What is left in a full buffer still has the client's deadline to be taken.
        if (stall !== undefined) response.once('finish', () => clearTimeout(stall));
        resolve();
      },
    });
    if (response.destroyed) return leave();
    response.once('close', leave);
    response.on('drain', resume);
  });
}

/**
 * After an answer sent before the body was read (request_too_large, a refusal before reading), the
 * rest is read and dropped so the connection can carry the next request, within bounds.
 */
function drainOrDrop(request: IncomingMessage): void {
  let bytes = 0;
  const timer = setTimeout(() => request.socket.destroy(), DRAIN_MAX_MS);
  timer.unref();
  request.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > DRAIN_MAX_BYTES) request.socket.destroy();
  });
  request.once('end', () => clearTimeout(timer));
  request.once('close', () => clearTimeout(timer));
  request.resume();
}
