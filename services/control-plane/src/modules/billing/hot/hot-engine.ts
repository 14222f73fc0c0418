import type { FinishBatchRequest, FinishBatchResponse, ReserveBatchRequest } from '@tollgate/schemas';
import { sql } from 'kysely';
import { type BillingEngine, cappedAccounts, type EngineParts, type LeaseSplit } from '../billing-engine.ts';
import { lockAccountRow } from '../engine.repository.ts';
import { countFinishedHot, countOtherFinishesHot, reserveCappedHot } from './hot-capped.ts';
import { changeEntries } from './hot-entries.ts';
import { renewSlots } from './hot-slots.ts';
import type { HotTier } from './hot-tier.ts';

/**
 * The hot tier as the billing engine (docs/billing/hot-tier.md): reservations and finishes in
 * Redis against leases of Postgres balances, spend caps counted in Redis, and every balance change
 * made in Postgres after the account's lease is recalled.
 */
export function createHotEngine(hot: HotTier, parts: EngineParts): HotEngine {
  const { db, caps, clock } = parts;
  const capDeps = { caps, clock, hot };
  const now = () => clock.now().getTime();

  /** Routes of routed calls commit with their settlement (hot-finish.ts, persist). */
  async function finish(request: FinishBatchRequest): Promise<FinishBatchResponse> {
    const finished = await hot.finish(request);
    const capped = await cappedAccounts(caps, request.items);
    if (capped.length > 0) await countFinishedHot(capDeps, request.items, finished.results, capped);
    return finished;
  }

  /**
   * How the account's lease splits what Postgres shows as reserved, per source: `free` is
   * spendable, `inFlight` held by calls under way. Postgres counts the whole lease (`leased`) as
   * reserved. Without Redis's view (unreachable, or no lease there) the whole lease stays shown as
   * reserved: never more spendable than is certain.
   */
  async function leaseSplit(accountId: string): Promise<LeaseSplit> {
    const split: LeaseSplit = new Map();
    const leaseParts = await db
      .selectFrom('hot_lease_parts as p')
      .innerJoin('hot_leases as l', 'l.id', 'p.lease_id')
      .select([
        'l.id as lease_id',
        'p.entitlement_id',
        sql<bigint>`p.leased - p.returned - p.spent - p.held`.as('outstanding'),
      ])
      .where('l.account_id', '=', accountId)
      .where('l.closed_at', 'is', null)
      .execute();
    if (leaseParts.length === 0) return split;
    const view = await hot.view(accountId).catch(() => null);
    for (const part of leaseParts) {
      const source = part.entitlement_id ?? 'c';
      const redis = view?.leaseId === part.lease_id ? view.sources.get(source) : undefined;
      // Redis counts a call's charge before Postgres does: never show more free than Postgres holds.
      const free = redis ? min(max(redis.free, 0n), part.outstanding) : 0n;
      split.set(source, { leased: part.outstanding, free, inFlight: part.outstanding - free });
    }
    return split;
  }

  return {
    kind: 'hot',
    tier: hot,
    async reserve(request: ReserveBatchRequest) {
      const capped = await cappedAccounts(caps, request.items);
      if (capped.length > 0) return reserveCappedHot(capDeps, request, capped);
      return hot.reserve(request);
    },
    finish,
    async lockAccount(trx, accountId) {
      await lockAccountRow(trx, accountId);
      await hot.recallInTransaction(trx, accountId);
    },
    resync: (accountId) => hot.resync(accountId),
    changeEntries: (change) => changeEntries(hot.store, db, now, change),
    leaseSplit,
    async reconcile(released) {
      // Released holds gave their amounts back to Postgres: leases may take them.
      for (const accountId of released) await hot.markMore(accountId);
      const swept = await hot.sweep();
      return { held: swept.held };
    },
    capCounts: (accountId, since) => hot.caps.counts(accountId, since),
    countOtherFinishes: (capped) => countOtherFinishesHot(hot, capped),
    renewSlots: (request) => renewSlots(hot.store, request),
    catalogChanged: () => hot.catalogChanged(),
    close: () => hot.close(),
  };
}

/** The engine with its hot tier at hand (the hot tier's own tests reach its store through it). */
export type HotEngine = BillingEngine & { readonly tier: HotTier };

const min = (a: bigint, b: bigint) => (a < b ? a : b);
const max = (a: bigint, b: bigint) => (a > b ? a : b);
