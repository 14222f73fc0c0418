import { type UpstreamTarget, upstreamKey } from './upstream-order.ts';

/**
 * Upstreams that failed a call lately, each until an instant: a failing upstream is tried last
 * for `cooldownMs` (or for the provider's own Retry-After, up to `maxRetryAfterMs`), so calls stop
 * paying its timeout or error first. Kept per gateway process (docs/routing.md).
 */
export function createCooldowns(options: {
  cooldownMs: number;
  maxRetryAfterMs: number;
  now?: () => number;
}) {
  const now = options.now ?? Date.now;
  const until = new Map<string, number>();
  return {
    isCooling(target: UpstreamTarget): boolean {
      // The common case, asked for each upstream of every routed call: nothing failed lately.
      if (until.size === 0) return false;
      const key = upstreamKey(target);
      const end = until.get(key);
      if (end === undefined) return false;
      if (end > now()) return true;
      until.delete(key);
      return false;
    },
    /** A failure before any byte reached the client; `retryAfterMs` from the provider's header. */
    failed(target: UpstreamTarget, retryAfterMs?: number): void {
      // 0 turns cooldowns off, Retry-After benches included.
      if (options.cooldownMs === 0) return;
      const span =
        retryAfterMs === undefined ? options.cooldownMs : Math.min(retryAfterMs, options.maxRetryAfterMs);
      const key = upstreamKey(target);
      until.set(key, Math.max(until.get(key) ?? 0, now() + span));
    },
    /** A success ends the upstream's cooldown at once. */
    succeeded(target: UpstreamTarget): void {
      if (until.size > 0) until.delete(upstreamKey(target));
    },
  };
}

export type Cooldowns = ReturnType<typeof createCooldowns>;

/** Retry-After as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(
  header: string | string[] | undefined,
  now: number = Date.now(),
): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
