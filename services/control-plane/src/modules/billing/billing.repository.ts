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

export function readCredit(db: Db, accountId: string) {
  return db.selectFrom('credit_balances').selectAll().where('account_id', '=', accountId).executeTakeFirst();
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
