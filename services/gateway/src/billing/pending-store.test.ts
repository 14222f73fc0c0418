import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FinishItem } from '@tollgate/schemas';
import { createLogger } from '@tollgate/service-kit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFilePendingStore, createMirroredPendingStore, type PendingStore } from './pending-store.ts';

const logger = createLogger({ name: 'pending-store-test', level: 'silent' });

function settle(): FinishItem {
  return {
    action: 'settle',
    reservationId: randomUUID(),
    keyId: randomUUID(),
    accountId: randomUUID(),
    alias: 'a',
    surface: 'messages',
    httpStatus: 200,
    occurredAt: new Date().toISOString(),
    outcome: 'ok',
    usage: { inputTokens: '12', outputTokens: '3' },
  };
}

/** Stands in for Redis: `lose()` is a restart without persistence; `broken` fails every command. */
function memoryStore() {
  let items: FinishItem[] = [];
  const store = {
    kind: 'redis' as const,
    broken: false,
    lose() {
      items = [];
    },
    async save(more: FinishItem[]) {
      if (store.broken) throw new Error('redis down');
      items.push(...more);
    },
    async take() {
      if (store.broken) throw new Error('redis down');
      const taken = items;
      items = [];
      return taken;
    },
    async close() {},
  };
  return store;
}

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(path.join(tmpdir(), 'pending-store-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe('pending settlements kept in Redis and in the data folder', () => {
  it('delivers them after Redis lost them', async () => {
    const redis = memoryStore();
    const store = createMirroredPendingStore(redis, createFilePendingStore(folder, logger), logger);
    const items = [settle(), settle()];
    await store.save(items);
    redis.lose();
    expect(await store.take()).toEqual(items);
    expect(await store.take()).toEqual([]);
  });

  it('delivers an item both stores hold once', async () => {
    const store = createMirroredPendingStore(memoryStore(), createFilePendingStore(folder, logger), logger);
    const items = [settle(), settle(), settle()];
    await store.save(items.slice(0, 2));
    await store.save(items.slice(2));
    expect(await store.take()).toEqual(items);
  });

  it('keeps them when one store fails, and fails only when both do', async () => {
    const redis = memoryStore();
    // A data folder that cannot be created: its parent is a regular file.
    const blocked = path.join(folder, 'file');
    await writeFile(blocked, '');
    const noFolder: PendingStore = createFilePendingStore(path.join(blocked, 'data'), logger);
    const store = createMirroredPendingStore(redis, noFolder, logger);
    const kept = settle();
    await store.save([kept]);
    expect(await store.take()).toEqual([kept]);

    redis.broken = true;
    await expect(store.save([settle()])).rejects.toThrow('redis down');

    const withFolder = createMirroredPendingStore(redis, createFilePendingStore(folder, logger), logger);
    const local = settle();
    await withFolder.save([local]);
    expect(await withFolder.take()).toEqual([local]);
  });
});
