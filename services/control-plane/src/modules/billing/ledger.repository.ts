/** The ledger's rows: entitlements and credit with their ledger entries, and reads of an account's calls. */
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

export interface NewEntitlement {
  account_id: string;
  package_id: string | null;
  aliases: string[] | null;
  granted: bigint;
  expires_at: Date | null;
  max_output_tokens: number | null;
  requests_per_minute: number | null;
  concurrency: number | null;
  cause: string;
  idempotency_key: string | null;
  /** R2b: counts weighted units; a package's entitlement takes the package's counting. */
  weighted?: boolean;
}

export async function insertEntitlement(trx: Transaction<Database>, values: NewEntitlement): Promise<string> {
  const row = await trx
    .insertInto('entitlements')
    .values({ ...values, remaining: values.granted })
    .returning('id')
    .executeTakeFirstOrThrow();
  await trx
    .insertInto('ledger_entries')
    .values({
      account_id: values.account_id,
      entitlement_id: row.id,
      kind: 'grant',
      available_delta: values.granted,
      amount: values.granted,
      cause: values.cause,
    })
    .execute();
  return row.id;
}

export function findEntitlementByIdempotencyKey(db: Db, key: string) {
  return db.selectFrom('entitlements').selectAll().where('idempotency_key', '=', key).executeTakeFirst();
}

/** Claims a credit grant's idempotency key; undefined when it was claimed before (then read it). */
export function claimCreditGrantKey(
  trx: Transaction<Database>,
  key: string,
  accountId: string,
  amount: bigint,
) {
  return trx
    .insertInto('credit_grant_keys')
    .values({ idempotency_key: key, account_id: accountId, amount })
    .onConflict((conflict) => conflict.column('idempotency_key').doNothing())
    .returning('idempotency_key')
    .executeTakeFirst();
}

export function findCreditGrantKey(db: Db, key: string) {
  return db.selectFrom('credit_grant_keys').selectAll().where('idempotency_key', '=', key).executeTakeFirst();
}

/** Credit grant or adjustment, written with its ledger row. The account must be locked. */
export async function changeCredit(
  trx: Transaction<Database>,
  accountId: string,
  delta: bigint,
  kind: 'grant' | 'adjustment',
  cause: string,
): Promise<void> {
  const updated = await trx
    .updateTable('credit_balances')
    .set((eb) => ({ available: eb('available', '+', delta), updated_at: new Date() }))
    .where('account_id', '=', accountId)
    .where((eb) => eb(eb('available', '+', delta), '>=', 0n))
    .executeTakeFirst();
  if (updated.numUpdatedRows !== 1n) throw new RangeError('credit balance would go negative');
  await trx
    .insertInto('ledger_entries')
    .values({
      account_id: accountId,
      entitlement_id: null,
      kind,
      available_delta: delta,
      amount: delta,
      cause,
    })
    .execute();
}

export function listEntitlements(db: Db, accountId: string) {
  return db
    .selectFrom('entitlements')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('expires_at', (order) => order.asc().nullsLast())
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
/**
 * One page of an account's metered calls, newest first, after a (created_at, id) cursor. The
 * cursor time is text with microseconds (a JS Date keeps milliseconds and would skip rows).
 */
export function selectActivityPage(
  db: Db,
  accountId: string,
  page: {
    keyId: string | undefined;
    /** Only rows created in this span are read (one key's page: its first and last use). */
    span: { from: Date; to: Date } | null;
    after: { createdAt: string; id: string } | null;
    limit: number;
  },
) {
  const { keyId, span, after } = page;
  return (
    db
      .selectFrom('reservations')
      .selectAll()
      .select(
        sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as(
          'cursor_time',
        ),
      )
      .where('account_id', '=', accountId)
      .$if(keyId !== undefined, (q) => q.where('key_id', '=', keyId!))
      // The walk of the index starts and ends there instead of at the account's newest and first call.
      .$if(span !== null, (q) => q.where('created_at', '>=', span!.from).where('created_at', '<=', span!.to))
      // A row comparison, so the index (account_id, created_at desc, id desc) starts at the cursor.
      .$if(after !== null, (q) =>
        q.where(sql<boolean>`(created_at, id) < (${after!.createdAt}::timestamptz, ${after!.id}::uuid)`),
      )
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.limit)
      .execute()
  );
}

/** When the account's key was first and last used (migration 0011); null if never, or not its key. */
export async function selectKeyUse(
  db: Db,
  accountId: string,
  keyId: string,
): Promise<{ first: Date; last: Date } | null> {
  const row = await db
    .selectFrom('api_keys')
    .select(['first_used_at', 'last_used_at'])
    .where('id', '=', keyId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (!row?.first_used_at || !row.last_used_at) return null;
  return { first: row.first_used_at, last: row.last_used_at };
}
