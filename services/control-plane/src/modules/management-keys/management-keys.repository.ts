import { type Insertable, type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { ManagementKeysTable } from './management-keys.table.ts';

export type ManagementKeyRow = Selectable<ManagementKeysTable>;

export function insertManagementKey(
  db: Kysely<Database> | Transaction<Database>,
  values: Insertable<ManagementKeysTable>,
) {
  return db.insertInto('management_keys').values(values).returningAll().executeTakeFirstOrThrow();
}

/**
 * The reseller's live keys, counted under a lock held until the transaction ends, so that
 * parallel creations see each other's keys and the per-reseller limit holds.
 */
export async function countLiveKeysOfResellerLocked(trx: Transaction<Database>, resellerId: string) {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`management-keys:${resellerId}`}, 0))`.execute(
    trx,
  );
  const row = await trx
    .selectFrom('management_keys')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('reseller_id', '=', resellerId)
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export function selectKeysOfReseller(db: Kysely<Database>, resellerId: string) {
  return db
    .selectFrom('management_keys')
    .selectAll()
    .where('reseller_id', '=', resellerId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

/** Sets revoked_at once; a second revocation keeps the first time. */
export function revokeKeyOfReseller(db: Kysely<Database>, resellerId: string, keyId: string, now: Date) {
  return db
    .updateTable('management_keys')
    .set((eb) => ({ revoked_at: eb.fn.coalesce('revoked_at', eb.val(now)) }))
    .where('reseller_id', '=', resellerId)
    .where('id', '=', keyId)
    .returningAll()
    .executeTakeFirst();
}

/** The key with this lookup hash, with its reseller's standing (permission and status). */
export function selectKeyForAuth(db: Kysely<Database>, lookupHash: Buffer) {
  return db
    .selectFrom('management_keys as key')
    .innerJoin('accounts as reseller', 'reseller.id', 'key.reseller_id')
    .selectAll('key')
    .select(['reseller.is_reseller', 'reseller.status as reseller_status'])
    .where('key.lookup_hash', '=', lookupHash)
    .executeTakeFirst();
}

export async function touchLastUsed(db: Kysely<Database>, keyId: string, now: Date): Promise<void> {
  await db.updateTable('management_keys').set({ last_used_at: now }).where('id', '=', keyId).execute();
}
