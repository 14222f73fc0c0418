/**
 * Keeps floods of unrecognised keys away from the control plane (a lookup each): a digest the
 * control plane called unknown is answered invalid_api_key from memory for a while (a key's secret
 * is random, so an unknown digest does not become known), and a client address whose lookups found
 * too many unknown keys in a window gets no more lookups of digests it has not used successfully
 * until the window ends. Per gateway process.
 */
export interface UnknownKeyOptions {
  /** How long a digest found unknown is answered from memory. */
  ttlMs: number;
  /** Unknown keys one address may have looked up per window before its lookups stop. */
  perAddress: number;
  windowMs: number;
  maxEntries: number;
  now?: () => number;
}

export function createUnknownKeyGuard(options: UnknownKeyOptions) {
  const now = options.now ?? Date.now;
  const unknown = new Map<string, number>();
  const misses = new Map<string, { window: number; count: number }>();

  function windowOf(time: number): number {
    return Math.floor(time / options.windowMs);
  }

  return {
    /** Whether this digest was found unknown lately (answer invalid_api_key without a lookup). */
    isKnownUnknown(digest: string): boolean {
      const expiry = unknown.get(digest);
      if (expiry === undefined) return false;
      if (expiry > now()) return true;
      unknown.delete(digest);
      return false;
    },
    /** Seconds until this address may look keys up again, or 0 when it may now. */
    blockedFor(address: string): number {
      const time = now();
      const entry = misses.get(address);
      if (!entry || entry.window !== windowOf(time) || entry.count < options.perAddress) return 0;
      return Math.max(1, Math.ceil((options.windowMs - (time % options.windowMs)) / 1000));
    },
    /** A lookup from this address found the digest unknown. */
    recordUnknown(digest: string, address: string): void {
      const time = now();
      if (unknown.size >= options.maxEntries) {
        const oldest = unknown.keys().next().value;
        if (oldest !== undefined) unknown.delete(oldest);
      }
      unknown.set(digest, time + options.ttlMs);
      const window = windowOf(time);
      const entry = misses.get(address);
      if (entry && entry.window === window) entry.count += 1;
      else {
        if (misses.size >= options.maxEntries) misses.clear();
        misses.set(address, { window, count: 1 });
      }
    },
  };
}

export type UnknownKeyGuard = ReturnType<typeof createUnknownKeyGuard>;
