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
import type pg from 'pg';
import { inject } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { assembleDependencies, type Clock, type Dependencies } from '../src/deps.ts';
import { createMemoryPublisher } from '../src/events.ts';
import { createPublicApp } from '../src/http/app.ts';
import { createInternalApi } from '../src/http/internal-api.ts';
import { watchAutoTopUps } from '../src/modules/top-ups/auto-top-up.service.ts';

export interface TestClock extends Clock {
  /** Moves time forward (ms; back with a negative amount). Real time keeps running underneath. */
  advance(ms: number): void;
  /** How far it has been moved from real time (ms). */
  offset(): number;
  offsetMs(): number;
}

export function createTestClock(): TestClock {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance(ms) {
      offset += ms;
    },
    offset: () => offset,
    offsetMs: () => offset,
  };
}

/**
 * Postgres's clock for expiries (tollgate_now(), docs/billing/rules.md R16) follows the test
 * clock: a connection whose offset is not the clock's gets it before its next query (a query
 * sent on acquiring runs before the caller's).
 */
function followClock(pool: pg.Pool, clock: TestClock): void {
  const applied = new WeakMap<pg.PoolClient, number>();
  pool.on('acquire', (client) => {
    const offset = clock.offset();
    if ((applied.get(client) ?? 0) === offset) return;
    applied.set(client, offset);
    client.query(`select set_config('tollgate.clock_offset_ms', '${offset}', false)`).catch(() => {});
  });
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
  if (handle.pool) followClock(handle.pool, clock);
  const events = createMemoryPublisher();
  const deps = assembleDependencies({ config, logger, database: handle, events, clock });
  watchAutoTopUps(deps);
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
      await deps.billing.close();
      await handle.close();
      await database.drop();
      if (deps.billing.kind === 'hot') await removeRedisNamespace(services.redisUrl, redisPrefix);
    },
  };
}
