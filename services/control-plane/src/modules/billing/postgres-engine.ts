import type {
  FinishBatchRequest,
  FinishBatchResponse,
  ReserveBatchRequest,
  ReserveBatchResponse,
  ReserveItem,
  ReserveResult,
} from '@tollgate/schemas';
import { readCounts } from '../spend-caps/spend-caps.counting.ts';
import { capRefusal, countFinished, countOtherFinishesInPostgres } from '../spend-caps/spend-caps.finish.ts';
import { judgeBatchInTransaction } from '../spend-caps/spend-caps.postgres.ts';
import { finishResultOf, finishRowOfItem, reserveResultOf, reserveRowOf } from './billing.rows.ts';
import { type BillingEngine, cappedAccounts, type EngineParts } from './billing-engine.ts';
import * as repository from './engine.repository.ts';

/**
 * Postgres alone as the billing engine: each batch is one round trip to the money functions
 * (db/functions/*.sql), where key state, expiry, scope and alias are checked again inside the
 * transaction; spend caps are judged and counted in the same database.
 */
export function createPostgresEngine(
  parts: EngineParts,
  settings: { keyPepper: string; coverPercent: number },
): BillingEngine {
  const { db, prepared, caps, clock } = parts;

  async function reserve(request: ReserveBatchRequest): Promise<ReserveBatchResponse> {
    const capped = await cappedAccounts(caps, request.items);
    if (capped.length > 0) return reserveCapped(request, capped);
    const results = await repository.reserveBatch(
      prepared,
      request.items.map((item) => reserveRowOf(settings, item)),
    );
    return { results: results.map(reserveResultOf) };
  }

  /**
   * A batch with calls of capped accounts: one transaction that locks those accounts (in id order,
   * as tollgate_reserve does), judges each call against its caps (docs/billing/spend-caps.md),
   * reserves the calls that fit and counts their estimates, so concurrent calls of one account are
   * judged one after another against what the others counted.
   */
  async function reserveCapped(
    request: ReserveBatchRequest,
    capped: string[],
  ): Promise<ReserveBatchResponse> {
    const results = await db.transaction().execute(async (trx) => {
      for (const accountId of [...capped].sort()) await repository.lockAccountRow(trx, accountId);
      const judged = await judgeBatchInTransaction(trx, request.items, capped, clock.now());
      const results: ReserveResult[] = new Array(request.items.length);
      const admitted: number[] = [];
      judged.verdicts.forEach((verdict, index) => {
        const item = request.items[index] as ReserveItem;
        if (verdict && !verdict.ok) results[index] = capRefusal(item, verdict);
        else admitted.push(index);
      });
      if (admitted.length > 0) {
        const rows = await repository.reserveBatchIn(
          trx,
          admitted.map((index) => reserveRowOf(settings, request.items[index] as ReserveItem)),
        );
        rows.forEach((row, position) => {
          results[admitted[position] as number] = reserveResultOf(row);
        });
        await judged.record(admitted.filter((index) => results[index]?.ok));
      }
      return results;
    });
    return { results };
  }

  /** Routes of routed calls commit with their settlement (engine.repository.ts, finishBatch). */
  async function finish(request: FinishBatchRequest): Promise<FinishBatchResponse> {
    const results = await repository.finishBatch(prepared, request.items.map(finishRowOfItem));
    if ((await cappedAccounts(caps, request.items)).length > 0)
      await countFinished(db, request.items, results);
    return { results: results.map(finishResultOf) };
  }

  return {
    kind: 'postgres',
    reserve,
    finish,
    lockAccount: repository.lockAccountRow,
    resync: async () => {},
    async changeEntries(change) {
      const { result } = await db.transaction().execute(change);
      return result;
    },
    leaseSplit: async () => new Map(),
    reconcile: async () => ({ held: [] }),
    capCounts: (accountId, since) => readCounts(db, accountId, since),
    countOtherFinishes: (capped) => countOtherFinishesInPostgres(db, capped),
    renewSlots: async () => ({ renewed: 0 }),
    catalogChanged: () => {},
    close: async () => {},
  };
}
