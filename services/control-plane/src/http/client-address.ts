import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';

/**
 * The caller's address. Behind a trusted proxy (TRUST_PROXY) it is the last X-Forwarded-For
 * entry, the one our proxy appended; otherwise the socket's peer, since a client can write any
 * X-Forwarded-For it likes.
 */
export function clientAddressOf(c: Context, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = c.req.header('x-forwarded-for');
    const last = forwarded?.split(',').at(-1)?.trim();
    if (last) return last.slice(0, 64);
  }
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    // In-process requests (app.request in tests) have no socket.
    return 'unknown';
  }
}

export function userAgentOf(c: Context): string | null {
  return c.req.header('user-agent')?.slice(0, 512) ?? null;
}
