import { randomUUID } from 'node:crypto';
import { appendFile, mkdir, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { FinishItem } from '@tollgate/schemas';
import { connectRedis, type Logger, type RedisTarget } from '@tollgate/service-kit';

/**
 * Where settlements the control plane has not acknowledged are kept when the gateway must stop
 * (or its queue overflows), so they are delivered later (finish is idempotent by reservation id)
 * instead of being lost. With Redis any gateway picks them up at its start; without, the next
 * start of this gateway on the same data folder does.
 */
export interface PendingStore {
  readonly kind: 'redis' | 'file' | 'redis+file';
  save(items: FinishItem[]): Promise<void>;
  /** Removes and returns every kept item. */
  take(): Promise<FinishItem[]>;
  close(): Promise<void>;
}

function parseItems(lines: string[], logger: Logger): FinishItem[] {
  const items: FinishItem[] = [];
  for (const line of lines) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = undefined;
    }
    const parsed = FinishItem.safeParse(value);
    if (parsed.success) items.push(parsed.data);
    else logger.error({ line: line.slice(0, 200) }, 'unreadable pending settlement skipped');
  }
  return items;
}

export function createRedisPendingStore(
  target: RedisTarget | string,
  prefix: string,
  logger: Logger,
): PendingStore {
  const redis = connectRedis(target, {
    lazyConnect: true,
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
  });
  redis.on('error', () => {}); // failures surface from the commands themselves
  const key = `${prefix}billing:pending-finishes`;
  return {
    kind: 'redis',
    async save(items) {
      if (items.length === 0) return;
      await redis.rpush(key, ...items.map((item) => JSON.stringify(item)));
    },
    async take() {
      // One transaction: two gateways starting together never both take the same items.
      const result = await redis.multi().lrange(key, 0, -1).del(key).exec();
      const lines = (result?.[0]?.[1] as string[] | undefined) ?? [];
      return parseItems(lines, logger);
    },
    async close() {
      redis.disconnect();
    },
  };
}

export function createFilePendingStore(folder: string, logger: Logger): PendingStore {
  const file = path.join(folder, 'pending-finishes.jsonl');
  return {
    kind: 'file',
    async save(items) {
      if (items.length === 0) return;
      await mkdir(folder, { recursive: true });
      await appendFile(file, items.map((item) => `${JSON.stringify(item)}\n`).join(''), { mode: 0o600 });
    },
    async take() {
      // Moved aside first, so what is saved meanwhile goes to a fresh file and is not lost.
      const taking = `${file}.${randomUUID()}`;
      try {
        await rename(file, taking);
      } catch (error) {
        if ((error as { code?: string }).code === 'ENOENT') return [];
        throw error;
      }
      const items = parseItems((await readFile(taking, 'utf8')).split('\n'), logger);
      await unlink(taking);
      return items;
    },
    async close() {},
  };
}

/**
 * Redis, with a copy in this gateway's data folder: a Redis that restarts without persistence (or
 * is flushed) before any gateway has taken the items would otherwise lose them, and their calls
 * would go unbilled (held as settlement_missing). Items are delivered from whichever still has
 * them, once each per start; one delivered from both (Redis by another gateway, the copy by this
 * one at its next start) is a replay the control plane recognises by its reservation id. Saving
 * succeeds if either store took the items.
 */
export function createMirroredPendingStore(
  primary: PendingStore,
  copy: PendingStore,
  logger: Logger,
): PendingStore {
  return {
    kind: 'redis+file',
    async save(items) {
      const [main, local] = await Promise.allSettled([primary.save(items), copy.save(items)]);
      if (main.status === 'rejected' && local.status === 'rejected') throw main.reason;
      const failed = main.status === 'rejected' ? main : local.status === 'rejected' ? local : null;
      if (failed) {
        logger.warn(
          { err: failed.reason, store: failed === main ? primary.kind : copy.kind },
          'pending settlements kept in one store only',
        );
      }
    },
    async take() {
      const [main, local] = await Promise.allSettled([primary.take(), copy.take()]);
      if (main.status === 'rejected' && local.status === 'rejected') throw main.reason;
      const seen = new Set<string>();
      const items: FinishItem[] = [];
      for (const result of [main, local]) {
        if (result.status === 'rejected') {
          logger.error({ err: result.reason }, 'kept settlements could not be read from one store');
          continue;
        }
        for (const item of result.value) {
          if (seen.has(item.reservationId)) continue;
          seen.add(item.reservationId);
          items.push(item);
        }
      }
      return items;
    },
    async close() {
      await Promise.allSettled([primary.close(), copy.close()]);
    },
  };
}
