import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import { addressGroupOf } from './client-address.ts';

export type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

export interface Listening {
  server: Server;
  port: number;
  url: string;
  /** Stops accepting, lets in-flight requests finish (up to graceMs), then drops what is left. */
  close(graceMs?: number): Promise<void>;
}

/**
 * What one client may hold of a server: slow clients (one byte a second) are cut off by the
 * header and request timeouts, idle keep-alive connections by the idle timeout; an optional cap
 * bounds the connections of one client address.
 */
export interface ServerLimits {
  /** Longest time to receive a request's headers. */
  headersTimeoutMs: number;
  /** Longest time to receive a whole request (headers and body; the answer is not counted). */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open. */
  idleTimeoutMs: number;
  /**
   * Connections one client address (an IPv6 /64) may hold at once; 0 = no cap. Behind a proxy every
   * connection comes from the proxy: cap per client there, and set 0 here.
   */
  maxConnectionsPerAddress: number;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  idleTimeoutMs: 65_000,
  maxConnectionsPerAddress: 256,
};

/** How often Node checks the header and request timeouts (its default, 30 s, lets slow clients linger). */
const TIMEOUT_CHECK_MS = 1_000;

/** Options for node:http createServer (also @hono/node-server's `serverOptions`). */
export function serverOptions(limits: ServerLimits = DEFAULT_SERVER_LIMITS) {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: Math.max(limits.requestTimeoutMs, limits.headersTimeoutMs),
    keepAliveTimeout: limits.idleTimeoutMs,
    connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, limits.headersTimeoutMs),
  };
}

/** Closes connections beyond the cap of one client address (an IPv6 /64) at once. */
function capConnectionsPerAddress(server: Server, cap: number): void {
  if (cap <= 0) return;
  const open = new Map<string, number>();
  server.on('connection', (socket) => {
    const address = addressGroupOf(socket.remoteAddress);
    const count = (open.get(address) ?? 0) + 1;
    if (count > cap) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
}

/**
 * A request target in absolute form (`GET http://host/v1/models HTTP/1.1`, which HTTP/1.1 servers
 * must accept, RFC 9112 section 3.2.2) is rewritten to its origin form (`/v1/models`), so every
 * route matches it as it would the usual form. Runs before any other request listener.
 */
function acceptAbsoluteForm(server: Server): void {
  server.prependListener('request', (request: IncomingMessage) => {
    const url = request.url;
    if (url === undefined || url.startsWith('/') || !/^https?:\/\//i.test(url)) return;
    try {
      const parsed = new URL(url);
      request.url = `${parsed.pathname}${parsed.search}`;
    } catch {
      // Not a URL after all: left for the routes to refuse.
    }
  });
}

/**
 * Serves on host:port with the limits applied. A Server built elsewhere should be created with
 * `serverOptions(limits)` so that its timeouts are also checked often enough.
 */
export async function listen(
  listener: RequestListener | Server,
  port: number,
  host = '0.0.0.0',
  limits: ServerLimits = DEFAULT_SERVER_LIMITS,
): Promise<Listening> {
  const options = serverOptions(limits);
  const server = typeof listener === 'function' ? createServer(options, listener) : listener;
  server.headersTimeout = options.headersTimeout;
  server.requestTimeout = options.requestTimeout;
  server.keepAliveTimeout = options.keepAliveTimeout;
  capConnectionsPerAddress(server, limits.maxConnectionsPerAddress);
  acceptAbsoluteForm(server);
  const unused = trackUnusedConnections(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A burst of new connections (thousands of streams starting at once) waits in the kernel's
    // accept queue while the event loop is busy; Node's default of 511 overflows there and the
    // overflow is reset. The kernel caps this at net.core.somaxconn.
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    server,
    port: address.port,
    url: `http://${shownHost}:${address.port}`,
    close: (graceMs = 10_000) => closeServer(server, graceMs, unused),
  };
}

const LISTEN_BACKLOG = 4096;

/** How often a closing server drops the keep-alive connections that have become idle. */
const IDLE_SWEEP_MS = 50;

/**
 * Connections that have not sent a request yet (a client's or a balancer's spare connection):
 * Node counts them as waiting for headers, not idle, so closeIdleConnections leaves them open.
 */
function trackUnusedConnections(server: Server): Set<Socket> {
  const unused = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  server.on('request', (request: IncomingMessage) => {
    unused.delete(request.socket);
  });
  return unused;
}

function closeServer(server: Server, graceMs: number, unused: Set<Socket>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    timer.unref();
    // Keep-alive sockets with no request in flight would hold close() open until the grace
    // period ends; so would those whose last request (a long stream) finishes during it, and
    // connections that never sent a request (nothing was asked on them, so nothing is lost).
    const dropIdle = () => {
      server.closeIdleConnections();
      for (const socket of unused) socket.destroy();
    };
    const sweep = setInterval(dropIdle, IDLE_SWEEP_MS);
    sweep.unref();
    server.close(() => {
      clearTimeout(timer);
      clearInterval(sweep);
      resolve();
    });
    dropIdle();
  });
}

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits. A second signal exits at once.
 */
export function onShutdown(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
