import { type FinishItem, type ReserveItem, type ReserveResult, usageParts } from '@tollgate/schemas';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { CapVerdict } from './spend-caps.enforce.ts';
import { finishUsage } from './spend-caps.repository.ts';

/** A call over a cap: 429 rate_limit_exceeded, naming the cap, with when to retry. */
export function capRefusal(item: ReserveItem, verdict: Extract<CapVerdict, { ok: false }>): ReserveResult {
  return {
    ok: false,
    reservationId: item.reservationId,
    code: 'rate_limit_exceeded',
    message: verdict.message,
    ...(verdict.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: verdict.retryAfterSeconds }),
  };
}

/**
 * The settlement corrects what a call counts (Postgres engine): its usage once settled, nothing
 * once released; a held call keeps its estimate. Run after the finish commits: until then the call
 * counts its estimate, which is at least its usage but for input beyond the estimate.
 */
export async function countFinished(
  db: Kysely<Database>,
  items: readonly FinishItem[],
  results: ReadonlyArray<{ reservation_id: string; status: 'settled' | 'released' | 'held' }>,
): Promise<void> {
  await finishUsage(
    db,
    items.map((item, index) => {
      const parts = item.action === 'settle' ? usageParts(item.usage) : null;
      return {
        reservation_id: item.reservationId,
        state: results[index]?.status ?? 'held',
        input: parts?.input ?? 0n,
        output: parts?.output ?? 0n,
        cache_read: parts?.cacheRead ?? 0n,
        cache_write: parts?.cacheWrite ?? 0n,
        cache_write_1h: parts?.cacheWrite1h ?? 0n,
      };
    }),
  );
}

/** A finish that did not come from the gateway (an admin's resolution, the reconciler's release). */
export interface OtherFinish {
  accountId: string;
  reservationId: string;
  status: 'settled' | 'released' | 'held';
  /** input, output, cache read, cache write, 1-hour cache write; null unless settled. */
  parts: bigint[] | null;
}

/** The Postgres engine's part of countOtherFinishes (spend_cap_usage). */
export async function countOtherFinishesInPostgres(
  db: Kysely<Database>,
  capped: readonly OtherFinish[],
): Promise<void> {
  await finishUsage(
    db,
    capped.map((each) => {
      const [input = 0n, output = 0n, cacheRead = 0n, cacheWrite = 0n, cacheWrite1h = 0n] = each.parts ?? [];
      return {
        reservation_id: each.reservationId,
        state: each.status,
        input,
        output,
        cache_read: cacheRead,
        cache_write: cacheWrite,
        cache_write_1h: cacheWrite1h,
      };
    }),
  );
}
