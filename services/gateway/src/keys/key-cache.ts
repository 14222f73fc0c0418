import type { ResolvedKey } from '@tollgate/schemas';

export interface KeyCacheOptions {
  /** 0 turns caching off (every request asks the control plane). */
  ttlMs: number;
  maxEntries: number;
  now?: () => number;
}

interface Change {
  sequence: number;
  keyId?: string;
  accountId?: string;
  all?: boolean;
}

const MAX_CHANGES = 1_000;

/**
 * Presented-key digest -> resolved key, kept briefly so the hot path needs no round trip.
 * Entries are dropped at once when a key or account changes (invalidation events), and misses for
 * the same digest share one lookup. Metered calls are re-checked by the reservation anyway.
 */
export function createKeyCache(resolve: (digest: string) => Promise<ResolvedKey>, options: KeyCacheOptions) {
  const now = options.now ?? Date.now;
  const entries = new Map<string, { key: ResolvedKey; expiresAt: number }>();
  const lookups = new Map<string, Promise<ResolvedKey>>();
  // Invalidations seen while lookups were in flight: a lookup's answer is cached only if none of
  // them may concern it. An event about another key must not stop this one being cached.
  let sequence = 0;
  let inFlight = 0;
  let changes: Change[] = [];

  function store(digest: string, key: ResolvedKey): void {
    if (options.ttlMs <= 0) return;
    if (entries.size >= options.maxEntries) {
      const oldest = entries.keys().next().value;
      if (oldest !== undefined) entries.delete(oldest);
    }
    entries.set(digest, { key, expiresAt: now() + options.ttlMs });
  }

  function changedSince(startedAt: number, key: ResolvedKey): boolean {
    return changes.some(
      (change) =>
        change.sequence > startedAt &&
        (change.all || change.keyId === key.keyId || change.accountId === key.accountId),
    );
  }

  function record(change: Omit<Change, 'sequence'>): void {
    sequence += 1;
    if (inFlight === 0) return;
    // Lookups overlapping without end would grow the list: one "everything changed" stands in.
    if (changes.length < MAX_CHANGES) changes.push({ ...change, sequence });
    else changes = [{ all: true, sequence }];
  }

  /** Asks the control plane and caches the answer, unless the key changed meanwhile. */
  function resolveAndStore(digest: string): Promise<ResolvedKey> {
    const startedAt = sequence;
    inFlight += 1;
    return resolve(digest)
      .then((key) => {
        if (!changedSince(startedAt, key)) store(digest, key);
        return key;
      })
      .finally(() => {
        inFlight -= 1;
        if (inFlight === 0) changes = [];
      });
  }

  function dropWhere(change: Omit<Change, 'sequence'>, matches: (key: ResolvedKey) => boolean): void {
    record(change);
    for (const [digest, entry] of entries) if (matches(entry.key)) entries.delete(digest);
  }

  return {
    get(digest: string): Promise<ResolvedKey> | ResolvedKey {
      const entry = entries.get(digest);
      if (entry && entry.expiresAt > now()) return entry.key;
      if (entry) entries.delete(digest);
      const running = lookups.get(digest);
      if (running) return running;
      const lookup = resolveAndStore(digest).finally(() => lookups.delete(digest));
      lookups.set(digest, lookup);
      return lookup;
    },
    /**
     * Asks the control plane whatever is cached, and caches the answer. For the calls that have no
     * reservation to re-check the key: an invalidation event may land a moment after the change.
     */
    fresh(digest: string): Promise<ResolvedKey> {
      return resolveAndStore(digest);
    },
    /** The live cached entry for a digest, without asking anything (what the hot path would use). */
    peek(digest: string): ResolvedKey | null {
      const entry = entries.get(digest);
      return entry && entry.expiresAt > now() ? entry.key : null;
    },
    dropKey(keyId: string): void {
      dropWhere({ keyId }, (key) => key.keyId === keyId);
    },
    dropAccount(accountId: string): void {
      dropWhere({ accountId }, (key) => key.accountId === accountId);
    },
    clear(): void {
      record({ all: true });
      entries.clear();
    },
  };
}

export type KeyCache = ReturnType<typeof createKeyCache>;
