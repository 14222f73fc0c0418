import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { AccountKeyLimitsTable } from './key-limits.table.ts';

export type AccountKeyLimitsRow = Omit<AccountKeyLimitsTable, 'updated_at'>;

export async function selectAccountKeyLimits(
  db: Kysely<Database>,
  accountId: string,
): Promise<AccountKeyLimitsRow | undefined> {
  return db
    .selectFrom('account_key_limits')
    .select(['account_id', 'max_request_bytes', 'max_output_tokens', 'requests_per_minute', 'concurrency'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

export async function upsertAccountKeyLimits(
  db: Kysely<Database>,
  row: AccountKeyLimitsRow,
  now: Date,
): Promise<void> {
  const { account_id: _accountId, ...values } = row;
  await db
    .insertInto('account_key_limits')
    .values({ ...row, updated_at: now })
    .onConflict((conflict) => conflict.column('account_id').doUpdateSet({ ...values, updated_at: now }))
    .execute();
}

/** Lowers every key of the account to the given maxima, in one statement; returns the keys changed. */
export async function clampKeysOfAccount(
  db: Kysely<Database>,
  accountId: string,
  maxima: {
    maxRequestBytes: number;
    maxOutputTokens: number;
    requestsPerMinute: number;
    concurrency: number;
  },
  now: Date,
): Promise<string[]> {
  const rows = await db
    .updateTable('api_keys')
    .set({
      max_request_bytes: sql<number>`least(max_request_bytes, ${maxima.maxRequestBytes})`,
      max_output_tokens: sql<number>`least(max_output_tokens, ${maxima.maxOutputTokens})`,
      requests_per_minute: sql<number>`least(requests_per_minute, ${maxima.requestsPerMinute})`,
      concurrency: sql<number>`least(concurrency, ${maxima.concurrency})`,
      updated_at: now,
    })
    .where('account_id', '=', accountId)
    .where('status', '!=', 'revoked')
    .where((where) =>
      where.or([
        where('max_request_bytes', '>', maxima.maxRequestBytes),
        where('max_output_tokens', '>', maxima.maxOutputTokens),
        where('requests_per_minute', '>', maxima.requestsPerMinute),
        where('concurrency', '>', maxima.concurrency),
      ]),
    )
    .returning('id')
    .execute();
  return rows.map((row) => row.id);
}
