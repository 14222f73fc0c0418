import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.ts';

export async function selectEmailSettings(db: Kysely<Database>, accountId: string) {
  return db
    .selectFrom('email_settings')
    .select(['purchase_emails', 'low_balance_emails'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

export async function upsertEmailSettings(
  db: Kysely<Database>,
  accountId: string,
  values: { purchase_emails: boolean; low_balance_emails: boolean },
  now: Date,
): Promise<void> {
  await db
    .insertInto('email_settings')
    .values({ account_id: accountId, ...values, updated_at: now })
    .onConflict((conflict) => conflict.column('account_id').doUpdateSet({ ...values, updated_at: now }))
    .execute();
}

/** Paid orders since `since` whose owner takes purchase emails and was not sent one yet. */
export async function selectUnannouncedPurchases(db: Kysely<Database>, since: Date, limit: number) {
  return db
    .selectFrom('orders as o')
    .innerJoin('accounts as a', 'a.id', 'o.account_id')
    .leftJoin('packages as p', 'p.id', 'o.package_id')
    .leftJoin('email_settings as s', 's.account_id', 'o.account_id')
    .select([
      'o.id',
      'o.kind',
      'o.credits',
      'o.account_id',
      'a.email',
      'o.package_id',
      'p.name as package_name',
      'o.amount',
      'o.currency',
      'o.exponent',
      'o.tokens',
      'o.bonus_tokens',
      'o.bonus_credits',
      'o.paid_at',
      'o.auto_top_up_generation',
    ])
    .where('o.paid_at', '>=', since)
    .where((eb) => eb.or([eb('s.purchase_emails', 'is', null), eb('s.purchase_emails', '=', true)]))
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('email_notices as n')
            .select('n.subject_id')
            .where('n.kind', '=', 'purchase')
            .whereRef('n.subject_id', '=', sql`o.id::text`),
        ),
      ),
    )
    .orderBy('o.paid_at')
    .limit(limit)
    .execute();
}

/** Claims a notice: true for the one caller that records it first. */
export async function claimNotice(
  db: Kysely<Database>,
  notice: { kind: 'purchase' | 'low_balance'; subjectId: string; accountId: string },
): Promise<boolean> {
  const row = await db
    .insertInto('email_notices')
    .values({ kind: notice.kind, subject_id: notice.subjectId, account_id: notice.accountId })
    .onConflict((conflict) => conflict.columns(['kind', 'subject_id']).doNothing())
    .returning('subject_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Arms every account whose credit (available and held) is at or above the threshold. */
export async function armLowBalance(db: Kysely<Database>, threshold: bigint): Promise<void> {
  await sql`
    insert into low_balance_armed (account_id)
    select account_id from credit_balances where available + reserved >= ${threshold}
    on conflict do nothing
  `.execute(db);
}

/** Armed accounts whose available credit is below the threshold and that take low-balance emails. */
export async function selectLowBalanceCandidates(db: Kysely<Database>, threshold: bigint, limit: number) {
  return db
    .selectFrom('low_balance_armed as l')
    .innerJoin('credit_balances as c', 'c.account_id', 'l.account_id')
    .innerJoin('accounts as a', 'a.id', 'l.account_id')
    .leftJoin('email_settings as s', 's.account_id', 'l.account_id')
    .select(['l.account_id', 'a.email'])
    .where('c.available', '<', threshold)
    .where((eb) => eb.or([eb('s.low_balance_emails', 'is', null), eb('s.low_balance_emails', '=', true)]))
    .limit(limit)
    .execute();
}

/** Disarms an account: true for the one caller that does it (that one sends the email). */
export async function disarmLowBalance(db: Kysely<Database>, accountId: string): Promise<boolean> {
  const row = await db
    .deleteFrom('low_balance_armed')
    .where('account_id', '=', accountId)
    .returning('account_id')
    .executeTakeFirst();
  return row !== undefined;
}
