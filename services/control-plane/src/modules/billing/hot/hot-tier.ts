import type { Logger } from '@tollgate/service-kit';
import type { Kysely } from 'kysely';
import type { Clock } from '../../../clock.ts';
import type { ControlPlaneConfig } from '../../../config.ts';
import type { PreparedQueries } from '../../../db/database.ts';
import type { Database } from '../../../db/schema.ts';
import { createAliasCache } from './hot-aliases.ts';
import { createHotCaps } from './hot-caps.ts';
import { createHotFinish } from './hot-finish.ts';
import { createLeases } from './hot-leases.ts';
import { createHotReserve } from './hot-reserve.ts';
import type { HotParts, HotTierDependencies } from './hot-shared.ts';
import { createHotStore, type HotStore, type LeaseView } from './hot-store.ts';
import { createHotSweep } from './hot-sweep.ts';

export type { HotTierDependencies } from './hot-shared.ts';

/**
 * The hot tier (docs/billing/hot-tier.md): reservations are answered from Redis against a lease of
 * each account's balances, with the key, the account, the alias and the limits checked in the
 * same script; finished calls are applied in Redis and written to Postgres in one durable
 * transaction per batch before the gateway is told. Postgres stays the source of truth: a lease is
 * money moved to `reserved` there, and whatever Redis loses is recovered from Postgres.
 */
export function createHotTier(deps: HotTierDependencies, store: HotStore) {
  const aliases = createAliasCache(deps.db);
  const now = () => deps.clock.now().getTime();
  const leases = createLeases({ db: deps.db, logger: deps.logger, now }, store);
  const parts: HotParts = { deps, store, leases, aliases };
  const reserve = createHotReserve(parts);
  const finishing = createHotFinish(parts);
  const sweep = createHotSweep(parts, finishing);

  // -------------------------------------------------------------------------------------------
  // Balance changes outside the hot path, reports.

  /** The account's lease as Redis holds it now (null: none), for balance reports. */
  function view(accountId: string): Promise<LeaseView | null> {
    return store.readLease(accountId);
  }

  /**
   * After a balance change that recalled the lease and then rolled back (refused): Redis gave back
   * what Postgres still counts as leased. Syncing the lease with Postgres makes it free again.
   */
  async function resync(accountId: string): Promise<void> {
    const lease = await store.readLease(accountId);
    if (lease) await leases.topUp(accountId, lease.leaseId);
  }

  return {
    store,
    reserve,
    finish: finishing.finish,
    recallInTransaction: leases.recallInTransaction,
    markMore: leases.markMore,
    resync,
    view,
    sweep,
    catalogChanged: () => aliases.drop(),
    caps: createHotCaps(store),
    close: async () => {
      await finishing.forgetWritten();
      await store.close();
    },
  };
}

export type HotTier = ReturnType<typeof createHotTier>;

/** The hot tier when REDIS_URL is set and HOT_TIER is on; null otherwise (reservations in Postgres). */
export function openHotTier(
  config: ControlPlaneConfig,
  parts: { db: Kysely<Database>; prepared: PreparedQueries; logger: Logger; clock: Clock },
): HotTier | null {
  if (!config.hotTier || !config.redisUrl) return null;
  const store = createHotStore(
    { url: config.redisUrl, cluster: config.redisCluster },
    config.redisKeyPrefix,
    parts.logger,
    () => parts.clock.offsetMs?.() ?? 0,
  );
  return createHotTier(
    {
      ...parts,
      keyPepper: config.keyPepper,
      coverPercent: config.billing.overrunCoverPercent,
      reservationTimeoutMs: config.billing.reservationTimeoutMs,
      idleMs: config.hotTier.idleMs,
      writeGraceMs: config.hotTier.writeGraceMs,
    },
    store,
  );
}
