import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

export async function selectTwoFactor(db: Kysely<Database>, accountId: string) {
  return db
    .selectFrom('two_factor_secrets')
    .selectAll()
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

/** A new pending enrolment, replacing an unconfirmed one (never a confirmed one). */
export async function upsertPendingSecret(
  db: Kysely<Database>,
  accountId: string,
  ciphertext: Buffer,
): Promise<boolean> {
  const row = await db
    .insertInto('two_factor_secrets')
    .values({ account_id: accountId, secret_ciphertext: ciphertext, confirmed_at: null })
    .onConflict((conflict) =>
      conflict
        .column('account_id')
        .doUpdateSet({ secret_ciphertext: ciphertext, last_used_step: null })
        .where('two_factor_secrets.confirmed_at', 'is', null),
    )
    .returning('account_id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Takes time step `step` for the account: true only when no code of this step or a later one was
 * accepted before, so each code signs in once even when sent twice at the same moment.
 */
export async function takeStep(db: Kysely<Database>, accountId: string, step: bigint): Promise<boolean> {
  const row = await db
    .updateTable('two_factor_secrets')
    .set({ last_used_step: step })
    .where('account_id', '=', accountId)
    .where((eb) => eb.or([eb('last_used_step', 'is', null), eb('last_used_step', '<', step)]))
    .returning('account_id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function markConfirmed(db: Kysely<Database>, accountId: string, now: Date): Promise<void> {
  await db
    .updateTable('two_factor_secrets')
    .set({ confirmed_at: now })
    .where('account_id', '=', accountId)
    .execute();
}

export async function replaceRecoveryCodes(
  db: Kysely<Database>,
  accountId: string,
  hashes: Buffer[],
): Promise<void> {
  await db.deleteFrom('two_factor_recovery_codes').where('account_id', '=', accountId).execute();
  await db
    .insertInto('two_factor_recovery_codes')
    .values(hashes.map((code_hash) => ({ account_id: accountId, code_hash, used_at: null })))
    .execute();
}

/** Spends one unused recovery code: true once per code, whoever asks at the same time. */
export async function spendRecoveryCode(
  db: Kysely<Database>,
  accountId: string,
  hash: Buffer,
  now: Date,
): Promise<boolean> {
  const row = await db
    .updateTable('two_factor_recovery_codes')
    .set({ used_at: now })
    .where('account_id', '=', accountId)
    .where('code_hash', '=', hash)
    .where('used_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function countUnusedRecoveryCodes(db: Kysely<Database>, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('two_factor_recovery_codes')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('account_id', '=', accountId)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export async function deleteTwoFactor(db: Kysely<Database>, accountId: string): Promise<void> {
  await db.deleteFrom('two_factor_recovery_codes').where('account_id', '=', accountId).execute();
  await db.deleteFrom('two_factor_secrets').where('account_id', '=', accountId).execute();
}
