import { type Kysely, sql, type Transaction } from 'kysely';
import type { PreparedQueries } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** Row shape the SQL functions take and return (snake_case, integer strings). */
export interface ReserveRow {
  reservation_id: string;
  lookup_hash: string;
  alias: string;
  surface: string;
  estimate_input: string;
  estimate_output: string;
}

export type ReserveRowResult =
  | {
      reservation_id: string;
      ok: true;
      key_id: string;
      account_id: string;
      provider_id: string;
      upstream_model: string;
      reserved_tokens: string;
      reserved_credits: string;
    }
  | { reservation_id: string; ok: false; code: string };

export interface FinishRow {
  action: 'settle' | 'release' | 'hold';
  reservation_id: string;
  key_id: string;
  account_id: string;
  alias: string;
  surface: string;
  outcome: string;
  /** Omitted by the reconciler: the status the client saw stays as recorded. */
  http_status?: number;
  occurred_at: string;
  input_tokens?: string;
  output_tokens?: string;
}

export interface FinishRowResult {
  reservation_id: string;
  status: 'settled' | 'released' | 'held';
  replay: boolean;
  charged_tokens: string;
  charged_credits: string;
  written_off_tokens: string;
  written_off_credits: string;
}

/** One round trip: every reservation of the batch (see migration 0003). */
export async function reserveBatch(
  prepared: PreparedQueries,
  rows: ReserveRow[],
): Promise<ReserveRowResult[]> {
  const [row] = await prepared.run<{ results: ReserveRowResult[] }>(
    'tollgate_reserve',
    'select tollgate_reserve($1::jsonb) as results',
    [JSON.stringify(rows)],
  );
  return row!.results;
}

/** One round trip, one durable commit: every settle/release/hold of the batch. */
export async function finishBatch(prepared: PreparedQueries, rows: FinishRow[]): Promise<FinishRowResult[]> {
  const [row] = await prepared.run<{ results: FinishRowResult[] }>(
    'tollgate_finish',
    'select tollgate_finish($1::jsonb) as results',
    [JSON.stringify(rows)],
  );
  return row!.results;
}

/** Serialises every balance change of one account (see tollgate_lock_account). */
export async function lockAccount(trx: Transaction<Database>, accountId: string): Promise<void> {
  await sql`select tollgate_lock_account(${accountId}::uuid)`.execute(trx);
}

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

/** Usable entitlements, in the order reservations draw from them. */
export function listUsableEntitlements(db: Db, accountId: string, now: Date) {
  return db
    .selectFrom('entitlements')
    .select([
      'id',
      'package_id',
      'aliases',
      'expires_at',
      'max_output_tokens',
      'requests_per_minute',
      'concurrency',
    ])
    .where('account_id', '=', accountId)
    .where('remaining', '>', 0n)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .orderBy('expires_at', (order) => order.asc().nullsLast())
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export function findReservation(db: Db, id: string) {
  return db.selectFrom('reservations').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The finish of a stored reservation: its own key, account, alias and surface, and what to do. */
export function finishRowOf(
  row: { id: string; key_id: string; account_id: string; alias: string; surface: string },
  action: FinishRow['action'],
  outcome: string,
  occurredAt: string,
): FinishRow {
  return {
    action,
    reservation_id: row.id,
    key_id: row.key_id,
    account_id: row.account_id,
    alias: row.alias,
    surface: row.surface,
    outcome,
    occurred_at: occurredAt,
  };
}

/** Reservations still open past their deadline, oldest first. */
export function listStaleReservations(db: Db, status: 'reserved' | 'held', before: Date, limit: number) {
  return db
    .selectFrom('reservations')
    .select(['id', 'account_id', 'key_id', 'alias', 'surface'])
    .where('status', '=', status)
    .where((eb) => (status === 'reserved' ? eb('created_at', '<', before) : eb('finished_at', '<', before)))
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

export function listHeldReservations(db: Db, limit: number) {
  return db
    .selectFrom('reservations')
    .selectAll()
    .where('status', '=', 'held')
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/** One page of an account's metered calls, newest first, after a (created_at, id) cursor. */
export function selectActivityPage(
  db: Db,
  accountId: string,
  page: { keyId: string | undefined; after: { createdAt: Date; id: string } | null; limit: number },
) {
  const { keyId, after } = page;
  return db
    .selectFrom('reservations')
    .selectAll()
    .where('account_id', '=', accountId)
    .$if(keyId !== undefined, (q) => q.where('key_id', '=', keyId!))
    .$if(after !== null, (q) =>
      q.where((eb) =>
        eb.or([
          eb('created_at', '<', after!.createdAt),
          eb.and([eb('created_at', '=', after!.createdAt), eb('id', '<', after!.id)]),
        ]),
      ),
    )
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .execute();
}

/** Settled usage per UTC day and alias, for calls created in [from, end). */
export async function selectUsageSummary(db: Db, accountId: string, from: Date, end: Date) {
  const result = await sql<{
    day: string;
    alias: string;
    requests: number;
    input_tokens: bigint;
    output_tokens: bigint;
    charged_tokens: bigint;
    charged_credits: bigint;
  }>`
    select to_char(date_trunc('day', created_at at time zone 'UTC'), 'YYYY-MM-DD') as day, alias,
           count(*)::int as requests,
           coalesce(sum(input_tokens), 0)::bigint as input_tokens,
           coalesce(sum(output_tokens), 0)::bigint as output_tokens,
           sum(charged_tokens)::bigint as charged_tokens,
           sum(charged_credits)::bigint as charged_credits
    from reservations
    where account_id = ${accountId}::uuid and status = 'settled'
      and created_at >= ${from} and created_at < ${end}
    group by 1, 2
    order by 1, 2
  `.execute(db);
  return result.rows;
}
