/**
 * Test context for control-plane service tests: a fresh database on the real test Postgres
 * (a copy of the run's template, migrated once with the real migrations), a Redis key prefix of its own, captured logs, and the
 * public and internal apps wired exactly as main.ts wires them.
 */
import { Writable } from 'node:stream';
import { createLogger } from '@tollgate/service-kit';
import {
  createRedisNamespace,
  createTestDatabase,
  removeRedisNamespace,
  testSecrets,
} from '@tollgate/test-harness';
import { inject } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import type { Clock, Dependencies } from '../src/deps.ts';
import { createMemoryPublisher, withCatalogHook } from '../src/events.ts';
import { createPublicApp } from '../src/http/app.ts';
import { createInternalApi } from '../src/http/internal-api.ts';
import { openHotTier } from '../src/modules/billing/hot/hot-tier.ts';

export interface TestClock extends Clock {
  /** Moves time forward (ms; back with a negative amount). Real time keeps running underneath. */
  advance(ms: number): void;
  /** How far it has been moved from real time (ms). */
  offset(): number;
}

export function createTestClock(): TestClock {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance(ms) {
      offset += ms;
    },
    offset: () => offset,
  };
}

export interface TestContext {
  deps: Dependencies;
  clock: TestClock;
  events: ReturnType<typeof createMemoryPublisher>;
  publicApp: ReturnType<typeof createPublicApp>;
  /** The internal API, called in-process (`internalApp.request(path, init)`). */
  internalApp: ReturnType<typeof createInternalApi>;
  /** Every log line written so far (JSON text), for scanning for secrets. */
  logLines: string[];
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  close(): Promise<void>;
}

export async function createTestContext(
  label: string,
  env: Record<string, string | undefined> = {},
  options: { hotTier?: boolean } = {},
): Promise<TestContext> {
  const services = inject('testServices');
  const database = await createTestDatabase(services.postgresUrl, label, {
    template: services.templateDatabase,
  });
  const redisPrefix = createRedisNamespace(label);
  const config = loadConfig({
    ...testSecrets(),
    DATABASE_URL: database.url,
    DATABASE_POOL_SIZE: '10',
    REDIS_KEY_PREFIX: redisPrefix,
    LOG_LEVEL: 'debug',
    // The hot tier needs Redis; without it every reservation is a Postgres transaction.
    ...(options.hotTier ? { REDIS_URL: services.redisUrl } : {}),
    ...env,
  });
  const logLines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      logLines.push(String(chunk));
      callback();
    },
  });
  const logger = createLogger({ name: 'control-plane-test', level: 'debug', destination });
  const handle = await openDatabase({ databaseUrl: database.url, poolSize: 10, dataDir: '' });
  // A copy of the run's migrated template (test/global-setup.ts): this finds nothing to apply.
  await migrateToLatest(handle.db);
  const clock = createTestClock();
  const events = createMemoryPublisher();
  const hot = openHotTier(config, { db: handle.db, prepared: handle.prepared, logger, clock });
  const deps: Dependencies = {
    config,
    logger,
    db: handle.db,
    prepared: handle.prepared,
    dbMode: handle.mode,
    clock,
    events: withCatalogHook(events, hot),
    hot,
  };
  return {
    deps,
    clock,
    events,
    publicApp: createPublicApp(deps),
    internalApp: createInternalApi(deps),
    logLines,
    databaseUrl: database.url,
    redisUrl: services.redisUrl,
    redisPrefix,
    async close() {
      await hot?.close();
      await handle.close();
      await database.drop();
      if (hot) await removeRedisNamespace(services.redisUrl, redisPrefix);
    },
  };
}
