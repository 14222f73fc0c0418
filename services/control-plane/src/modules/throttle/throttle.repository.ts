import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.ts';

export interface BucketState {
  windowStartedAt: Date;
  hits: number;
}

/**
 * Counts one hit in a fixed window, atomically: a bucket whose window has passed starts over.
 * One statement, so concurrent instances never lose a hit.
 */
export async function incrementBucket(
  db: Kysely<Database>,
  key: string,
  now: Date,
  windowMs: number,
): Promise<BucketState> {
  const windowStart = new Date(now.getTime() - windowMs);
  const row = await db
    .insertInto('throttle_buckets')
    .values({ key, window_started_at: now, hits: 1, blocked_until: null })
    .onConflict((conflict) =>
      conflict.column('key').doUpdateSet({
        window_started_at: sql<Date>`case when throttle_buckets.window_started_at <= ${windowStart}
          then ${now}::timestamptz else throttle_buckets.window_started_at end`,
        hits: sql<number>`case when throttle_buckets.window_started_at <= ${windowStart}
          then 1 else throttle_buckets.hits + 1 end`,
      }),
    )
    .returning(['window_started_at', 'hits'])
    .executeTakeFirstOrThrow();
  return { windowStartedAt: row.window_started_at, hits: row.hits };
}

export async function findBucket(db: Kysely<Database>, key: string): Promise<BucketState | null> {
  const row = await db
    .selectFrom('throttle_buckets')
    .select(['window_started_at', 'hits'])
    .where('key', '=', key)
    .executeTakeFirst();
  return row ? { windowStartedAt: row.window_started_at, hits: row.hits } : null;
}

/**
 * Gives back one hit counted in the current window (a slot taken for an attempt that succeeded),
 * in one statement so it never races the increment.
 */
export async function decrementBucket(
  db: Kysely<Database>,
  key: string,
  windowStartedAt: Date,
): Promise<void> {
  await db
    .updateTable('throttle_buckets')
    .set({ hits: sql<number>`greatest(hits - 1, 0)` })
    .where('key', '=', key)
    .where('window_started_at', '=', windowStartedAt)
    .execute();
}

export async function deleteBucket(db: Kysely<Database>, key: string): Promise<void> {
  await db.deleteFrom('throttle_buckets').where('key', '=', key).execute();
}

/** Drops buckets whose window ended long ago, so the table does not grow without bound. */
export async function deleteBucketsOlderThan(db: Kysely<Database>, before: Date): Promise<void> {
  await db.deleteFrom('throttle_buckets').where('window_started_at', '<', before).execute();
}
