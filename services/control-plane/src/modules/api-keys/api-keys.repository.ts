import {
  type Insertable,
  type Kysely,
  type Selectable,
  sql,
  type Transaction,
  type Updateable,
} from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { ApiKeysTable } from './api-keys.table.ts';

export type ApiKeyRow = Selectable<ApiKeysTable>;

export async function insertKey(
  db: Kysely<Database> | Transaction<Database>,
  values: Insertable<ApiKeysTable>,
): Promise<ApiKeyRow> {
  return db.insertInto('api_keys').values(values).returningAll().executeTakeFirstOrThrow();
}

export async function selectKeysOfAccount(db: Kysely<Database>, accountId: string): Promise<ApiKeyRow[]> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute();
}

/**
 * The account's keys, counted under a lock held until the transaction ends, so that parallel
 * creations see each other's keys and the per-account limit holds.
 */
export async function countKeysOfAccountLocked(
  trx: Transaction<Database>,
  accountId: string,
): Promise<number> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`api-keys:${accountId}`}, 0))`.execute(trx);
  const row = await trx
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export async function selectKeyOfAccount(
  db: Kysely<Database>,
  accountId: string,
  keyId: string,
): Promise<ApiKeyRow | undefined> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', keyId)
    .executeTakeFirst();
}

/** Updates a key of the account unless it is revoked (revocation is permanent). */
export async function updateUnrevokedKey(
  db: Kysely<Database> | Transaction<Database>,
  accountId: string,
  keyId: string,
  changes: Updateable<ApiKeysTable>,
): Promise<ApiKeyRow | undefined> {
  return db
    .updateTable('api_keys')
    .set(changes)
    .where('account_id', '=', accountId)
    .where('id', '=', keyId)
    .where('status', '!=', 'revoked')
    .returningAll()
    .executeTakeFirst();
}

export async function selectKeyByLookupHash(
  db: Kysely<Database>,
  lookupHash: Buffer,
): Promise<(ApiKeyRow & { account_status: 'active' | 'suspended' }) | undefined> {
  return db
    .selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .selectAll('api_keys')
    .select('accounts.status as account_status')
    .where('api_keys.lookup_hash', '=', lookupHash)
    .executeTakeFirst();
}
