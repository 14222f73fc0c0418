import type { Logger } from '@tollgate/service-kit';
import type { Kysely } from 'kysely';
import { type Clock, systemClock } from './clock.ts';
import type { ControlPlaneConfig } from './config.ts';
import type { DatabaseHandle, PreparedQueries } from './db/database.ts';
import type { Database } from './db/schema.ts';
import { type EventPublisher, withCatalogHook } from './events.ts';
import { type BillingEngine, openBillingEngine } from './modules/billing/engines.ts';
import { createSettlementWatch, type SettlementWatch } from './modules/billing/settlement-watch.ts';
import { createSpendCapCache, type SpendCapCache } from './modules/spend-caps/spend-caps.cache.ts';

export { type Clock, systemClock } from './clock.ts';

/** Everything a route or domain service may use, built once in main.ts (or a test) and injected. */
export interface Dependencies {
  config: ControlPlaneConfig;
  logger: Logger;
  db: Kysely<Database>;
  /** Prepared statements for the hot billing calls (same pool as db). */
  prepared: PreparedQueries;
  dbMode: 'postgres' | 'embedded';
  clock: Clock;
  events: EventPublisher;
  /**
   * The billing engine, chosen here once: Postgres alone, or the hot tier in front of it
   * (docs/billing/hot-tier.md). Nothing else asks which.
   */
  billing: BillingEngine;
  /** Which accounts have spend caps (docs/billing/spend-caps.md), cached briefly. */
  caps: SpendCapCache;
  /** Told which accounts' calls were settled (automatic top-ups listen: docs/payments.md). */
  settled: SettlementWatch;
}

/** The one way dependencies are assembled (server and operator CLI alike). */
export function assembleDependencies(parts: {
  config: ControlPlaneConfig;
  logger: Logger;
  database: DatabaseHandle;
  events: EventPublisher;
  clock?: Clock;
}): Dependencies {
  const clock = parts.clock ?? systemClock;
  const { db, prepared } = parts.database;
  const caps = createSpendCapCache(db, () => clock.now().getTime());
  const billing = openBillingEngine(parts.config, { db, prepared, clock, caps, logger: parts.logger });
  return {
    config: parts.config,
    logger: parts.logger,
    db: parts.database.db,
    prepared: parts.database.prepared,
    dbMode: parts.database.mode,
    clock,
    // The engine caches the catalogue: a change made here drops it at once.
    events: withCatalogHook(parts.events, billing),
    billing,
    caps,
    settled: createSettlementWatch(),
  };
}
