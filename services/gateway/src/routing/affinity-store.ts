import { connectRedis, type Logger, type RedisConnection, type RedisTarget } from '@tollgate/service-kit';

/**
 * Which upstream served a conversation's last turn (docs/routing.md, prompt-cache affinity), by
 * affinity key (conversation.ts), for `ttlMs` after its last turn. With Redis every gateway shares
 * it; without, it lives in this process. A turn that stays where the last one went costs one
 * command (the read renews the record); only a move writes.
 */
export interface AffinityStore {
  readonly kind: 'redis' | 'memory';
  /**
   * The record as a reservation may read it in the same step (the control plane's hot tier, in
   * Redis): its name and how long a read renews it; null when it lives in this process.
   */
  recordOf(key: string): { record: string; ttlMs: number } | null;
  /**
   * Whether the last reservation that was asked read the record (then a call waits for that
   * answer instead of reading it itself at once). Learnt from each answer.
   */
  readByReservation: boolean;
  /**
   * The upstream (routing's upstreamKey) that served the conversation last, its record renewed
   * for another `ttlMs`; null when unknown.
   */
  get(key: string): Promise<string | null>;
  /** Records the upstream that served this turn when it is another one (fire and forget). */
  set(key: string, upstream: string): void;
  close(): Promise<void>;
}

/** How long a read may wait for Redis before the call goes on without affinity. */
const READ_TIMEOUT_MS = 100;

export function createMemoryAffinityStore(options: {
  ttlMs: number;
  maxEntries: number;
  now?: () => number;
}): AffinityStore {
  const now = options.now ?? Date.now;
  // Insertion order is use order (a read or a set re-inserts): the least used go first when full.
  const entries = new Map<string, { upstream: string; until: number }>();
  return {
    kind: 'memory',
    recordOf: () => null,
    readByReservation: false,
    async get(key) {
      const entry = entries.get(key);
      if (!entry) return null;
      entries.delete(key);
      if (entry.until <= now()) return null;
      entries.set(key, { upstream: entry.upstream, until: now() + options.ttlMs });
      return entry.upstream;
    },
    set(key, upstream) {
      entries.delete(key);
      entries.set(key, { upstream, until: now() + options.ttlMs });
      while (entries.size > options.maxEntries) entries.delete(entries.keys().next().value!);
    },
    async close() {},
  };
}

export function createRedisAffinityStore(
  target: RedisTarget,
  options: { prefix: string; ttlMs: number; logger: Logger },
): AffinityStore {
  const redis: RedisConnection = connectRedis(target, {
    lazyConnect: false,
    maxRetriesPerRequest: 1,
    // A Redis that is away costs a call its affinity, never its answer or a queue of commands.
    enableOfflineQueue: false,
    enableAutoPipelining: true,
  });
  let warned = false;
  redis.on('error', (error: Error) => {
    if (!warned) options.logger.warn({ err: error }, 'affinity store: Redis unreachable; calls go unpinned');
    warned = true;
  });
  redis.on('ready', () => {
    warned = false;
  });
  // The key is the record's whole name after the prefix (affinityKey).
  const name = (key: string) => `${options.prefix}${key}`;
  return {
    kind: 'redis',
    recordOf: (key) => ({ record: name(key), ttlMs: options.ttlMs }),
    readByReservation: false,
    async get(key) {
      let timer: NodeJS.Timeout | undefined;
      try {
        return await Promise.race([
          // Read and renewed in one command: a turn that stays on its upstream writes nothing.
          redis.getex(name(key), 'PX', options.ttlMs),
          new Promise<null>((resolve) => {
            timer = setTimeout(() => resolve(null), READ_TIMEOUT_MS);
          }),
        ]);
      } catch {
        return null;
      } finally {
        clearTimeout(timer);
      }
    },
    set(key, upstream) {
      redis.set(name(key), upstream, 'PX', options.ttlMs).catch(() => {});
    },
    async close() {
      redis.disconnect();
    },
  };
}
