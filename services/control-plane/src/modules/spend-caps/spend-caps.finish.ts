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
