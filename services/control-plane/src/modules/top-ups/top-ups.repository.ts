import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

export function findAutoTopUp(db: Db, accountId: string) {
  return db.selectFrom('auto_top_ups').selectAll().where('account_id', '=', accountId).executeTakeFirst();
}

/** Every account with automatic top-up on (the settlement watch's cache). */
export async function listEnabledAccounts(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('auto_top_ups').select('account_id').where('enabled', '=', true).execute();
  return rows.map((row) => row.account_id);
}

/** Keeps the card a paid Stripe top-up saved (a row off until the customer turns it on). */
export async function saveCard(
  db: Db,
  input: {
    accountId: string;
    customer: string;
    paymentMethod: string;
    amount: bigint;
    currency: string;
    exponent: number;
  },
): Promise<void> {
  await db
    .insertInto('auto_top_ups')
    .values({
      account_id: input.accountId,
      enabled: false,
      threshold: 0n,
      amount: input.amount,
      currency: input.currency,
      exponent: input.exponent,
      stripe_customer: input.customer,
      payment_method: input.paymentMethod,
    })
    .onConflict((conflict) =>
      conflict.column('account_id').doUpdateSet({
        stripe_customer: input.customer,
        payment_method: input.paymentMethod,
        last_failure: null,
        updated_at: new Date(),
      }),
    )
    .execute();
}

/** Turns it on or off with a threshold and amount; every change arms it again (a new generation). */
export function putSettings(
  db: Db,
  accountId: string,
  settings: { enabled: boolean; threshold: bigint; amount: bigint; currency: string; exponent: number },
) {
  return db
    .updateTable('auto_top_ups')
    .set((eb) => ({
      ...settings,
      armed: settings.enabled,
      generation: eb('generation', '+', 1n),
      last_failure: null,
      updated_at: new Date(),
    }))
    .where('account_id', '=', accountId)
    .returningAll()
    .executeTakeFirst();
}

/** Forgets the card and turns automatic top-up off. */
export async function forgetCard(db: Db, accountId: string): Promise<void> {
  await db
    .updateTable('auto_top_ups')
    .set({
      enabled: false,
      armed: false,
      stripe_customer: null,
      payment_method: null,
      updated_at: new Date(),
    })
    .where('account_id', '=', accountId)
    .execute();
}

/**
 * Ends the armed state `generation` (a crossing): true for exactly one caller, however many
 * settlements saw the crossing at once.
 */
export async function disarm(
  trx: Transaction<Database>,
  accountId: string,
  generation: bigint,
): Promise<boolean> {
  const row = await trx
    .updateTable('auto_top_ups')
    .set({ armed: false, updated_at: new Date() })
    .where('account_id', '=', accountId)
    .where('enabled', '=', true)
    .where('armed', '=', true)
    .where('generation', '=', generation)
    .returning('account_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Arms it again after the balance is back at or above the threshold: a new generation. */
export async function rearm(db: Db, accountId: string, generation: bigint): Promise<void> {
  await db
    .updateTable('auto_top_ups')
    .set((eb) => ({ armed: true, generation: eb('generation', '+', 1n), updated_at: new Date() }))
    .where('account_id', '=', accountId)
    .where('enabled', '=', true)
    .where('armed', '=', false)
    .where('generation', '=', generation)
    .execute();
}

export async function recordFailure(db: Db, accountId: string, reason: string | null): Promise<void> {
  await db
    .updateTable('auto_top_ups')
    .set({ last_failure: reason, updated_at: new Date() })
    .where('account_id', '=', accountId)
    .execute();
}
