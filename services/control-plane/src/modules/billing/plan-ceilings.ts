import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.ts';

/** The plan rate and concurrency ceilings that bound an account's keys; null where no plan bounds one. */
export interface PlanCeilings {
  requestsPerMinute: number | null;
  concurrency: number | null;
}

/**
 * Plan ceilings of the account's live entitlements (tokens left, not expired). A ceiling bounds
 * the keys only when every live entitlement sets it (the most generous plan wins); an account
 * without entitlements, or with one plan that leaves a ceiling open, is bounded by the account's
 * maxima alone.
 */
export async function readPlanCeilings(
  db: Kysely<Database>,
  accountId: string,
  now: Date,
): Promise<PlanCeilings> {
  const rows = await db
    .selectFrom('entitlements')
    .select(['requests_per_minute', 'concurrency'])
    .where('account_id', '=', accountId)
    // What a hot-tier lease holds of it is spendable too (migration 0012).
    .where(sql<boolean>`remaining + tollgate_hot_leased(id) > 0`)
    .where((where) => where.or([where('expires_at', 'is', null), where('expires_at', '>', now)]))
    .execute();
  const widest = (values: Array<number | null>): number | null =>
    values.length === 0 || values.some((value) => value === null) ? null : Math.max(...(values as number[]));
  return {
    requestsPerMinute: widest(rows.map((row) => row.requests_per_minute)),
    concurrency: widest(rows.map((row) => row.concurrency)),
  };
}
