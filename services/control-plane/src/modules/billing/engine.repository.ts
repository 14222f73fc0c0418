/**
 * The engine's SQL (R1-R14, R18): reservations and finishes through the money functions
 * (db/functions/*.sql), the account lock, the usable entitlements in draw order, and the
 * reservations the reconciler and holds finish.
 */
import { AppError } from '@tollgate/errors';
import { QuantityString, ReserveRefusalCode } from '@tollgate/schemas';
import { type Kysely, sql, type Transaction } from 'kysely';
import { z } from 'zod';
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
  /** See RESERVE_OVERRUN_COVER_PERCENT. */
  cover_percent: number;
}

/**
 * What tollgate_reserve returns for one item, checked at this boundary: an unexpected shape or
 * refusal code becomes a clean server_error rather than a TypeError further on.
 */
const ReserveRowResult = z.discriminatedUnion('ok', [
  z.object({
    reservation_id: z.string().uuid(),
    ok: z.literal(true),
    key_id: z.string().uuid(),
    account_id: z.string().uuid(),
    provider_id: z.string().min(1),
    upstream_model: z.string().min(1),
    reserved_tokens: QuantityString,
    reserved_credits: QuantityString,
  }),
  z.object({ reservation_id: z.string().uuid(), ok: z.literal(false), code: ReserveRefusalCode }),
]);
export type ReserveRowResult = z.infer<typeof ReserveRowResult>;

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
  /** Input outside any cache; the cache parts beside it (absent: zero). */
  input_tokens?: string;
  output_tokens?: string;
  cache_read_tokens?: string;
  cache_write_tokens?: string;
  cache_write_1h_tokens?: string;
  /** The upstream that served the call (routed aliases only): recorded in the same transaction. */
  route?: { provider_id: string; upstream_model: string; attempts: number };
}

const FinishRowResult = z.object({
  reservation_id: z.string().uuid(),
  status: z.enum(['settled', 'released', 'held']),
  replay: z.boolean(),
  charged_tokens: QuantityString,
  charged_credits: QuantityString,
  written_off_tokens: QuantityString,
  written_off_credits: QuantityString,
});
export type FinishRowResult = z.infer<typeof FinishRowResult>;

/** Parses what a money function returned; anything unexpected is a server fault, never a crash. */
function fromSql<T extends z.ZodType>(schema: T, value: unknown, fn: string): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new AppError('server_error', {
      cause: new Error(`${fn} returned an unexpected result`, { cause: parsed.error }),
    });
  }
  return parsed.data;
}

/** One round trip: every reservation of the batch (db/functions/reserve.sql). */
export async function reserveBatch(
  prepared: PreparedQueries,
  rows: ReserveRow[],
): Promise<ReserveRowResult[]> {
  const [row] = await prepared.run<{ results: unknown }>(
    'tollgate_reserve',
    'select tollgate_reserve($1::jsonb) as results',
    [JSON.stringify(rows)],
  );
  return fromSql(z.array(ReserveRowResult).length(rows.length), row?.results, 'tollgate_reserve');
}

/** The same, inside the caller's transaction. */
export async function reserveBatchIn(
  trx: Transaction<Database>,
  rows: ReserveRow[],
): Promise<ReserveRowResult[]> {
  const result = await sql<{
    results: unknown;
  }>`select tollgate_reserve(${JSON.stringify(rows)}::jsonb) as results`.execute(trx);
  return fromSql(z.array(ReserveRowResult).length(rows.length), result.rows[0]?.results, 'tollgate_reserve');
}

/** What tollgate_hot_persist returns per call (db/functions/hot-tier.sql): a result, or stale (not written). */
const PersistRowResult = z.union([
  FinishRowResult,
  z.object({ reservation_id: z.string().uuid(), stale: z.literal(true) }),
]);

export function parsePersistResults(value: unknown, count: number): Array<z.infer<typeof PersistRowResult>> {
  return fromSql(z.array(PersistRowResult).length(count), value, 'tollgate_hot_persist');
}

let flushSlot = 0;

/** Rows of billing_flush_marks (migration 0010). */
const FLUSH_SLOTS = 64;

/**
 * Items per transaction of a finish batch. A transaction locks the balances of its accounts until
 * it commits, and reservations of those accounts wait meanwhile: small transactions keep that
 * wait short (each item takes a few hundred µs), at the cost of a round trip per chunk.
 */
const FINISH_CHUNK = 16;

/**
 * Which upstream served each finished call that reached one (routed aliases; docs/routing.md),
 * inside the transaction that finishes it, so a finish that fails leaves no route behind; a repeat
 * changes nothing.
 */
async function recordRoutesIn(trx: Transaction<Database>, rows: FinishRow[]): Promise<void> {
  const routes = rows.flatMap((row) =>
    row.route ? [{ reservation_id: row.reservation_id, ...row.route }] : [],
  );
  if (routes.length === 0) return;
  await trx
    .insertInto('reservation_routes')
    .values(routes)
    .onConflict((conflict) => conflict.column('reservation_id').doNothing())
    .execute();
}

/** The same for finishBatch's chunks, in the statement itself (its rows are `$1`). */
const WITH_ROUTES = `with routes as (
  insert into reservation_routes (reservation_id, provider_id, upstream_model, attempts)
  select (i->>'reservation_id')::uuid, i#>>'{route,provider_id}', i#>>'{route,upstream_model}',
         (i#>>'{route,attempts}')::int
  from jsonb_array_elements($1::jsonb) i where i ? 'route'
  on conflict (reservation_id) do nothing)`;

/**
 * Every settle/release/hold of the batch, durable when this resolves. Each chunk commits without
 * waiting for the disk, so the balances it locked are free at once; then a mark commits durably,
 * and since the WAL is flushed in order, that flush covers every chunk (migration 0010). If a
 * chunk fails, the caller sends the whole batch again: the chunks before it replay unchanged.
 */
export async function finishBatch(prepared: PreparedQueries, rows: FinishRow[]): Promise<FinishRowResult[]> {
  const results: FinishRowResult[] = [];
  for (let start = 0; start < rows.length; start += FINISH_CHUNK) {
    const chunk = rows.slice(start, start + FINISH_CHUNK);
    const [row] = await prepared.run<{ results: unknown }>(
      'tollgate_finish_unflushed',
      `${WITH_ROUTES} select tollgate_finish_unflushed($1::jsonb) as results`,
      [JSON.stringify(chunk)],
    );
    results.push(...fromSql(z.array(FinishRowResult).length(chunk.length), row?.results, 'tollgate_finish'));
  }
  flushSlot = (flushSlot + 1) % FLUSH_SLOTS;
  await prepared.run(
    'tollgate_flush_mark',
    'update billing_flush_marks set marked_at = now() where slot = $1',
    [flushSlot],
  );
  return results;
}

/** Finishes a batch inside the caller's transaction (durably, when it commits). */
export async function finishBatchIn(
  trx: Transaction<Database>,
  rows: FinishRow[],
): Promise<FinishRowResult[]> {
  await recordRoutesIn(trx, rows);
  const result = await sql<{
    results: unknown;
  }>`select tollgate_finish(${JSON.stringify(rows)}::jsonb) as results`.execute(trx);
  return fromSql(z.array(FinishRowResult).length(rows.length), result.rows[0]?.results, 'tollgate_finish');
}

/**
 * Serialises every balance change of one account (R18, tollgate_lock_account). The account's row
 * lock alone: the hot tier's own lease operations take it; any other change of balances locks
 * through engines.ts (changeBalances, balancesIn), which also recalls the account's lease.
 */
export async function lockAccountRow(trx: Transaction<Database>, accountId: string): Promise<void> {
  await sql`select tollgate_lock_account(${accountId}::uuid)`.execute(trx);
}
/**
 * Usable entitlements, in the order reservations draw from them. "Usable" is the database's own
 * rule (tollgate_entitlement_usable, db/functions/draw.sql), the one reservations apply, on its clock.
 */
export function listUsableEntitlements(db: Db, accountId: string) {
  return (
    db
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
      // What a hot-tier lease holds of it is spendable too (migration 0012).
      .where(
        sql<boolean>`tollgate_entitlement_usable(remaining + tollgate_hot_leased(id), expires_at, aliases, null)`,
      )
      .orderBy('expires_at', (order) => order.asc().nullsLast())
      .orderBy('created_at')
      .orderBy('id')
      .execute()
  );
}

export function findReservations(db: Db, ids: string[]) {
  if (ids.length === 0) return Promise.resolve([]);
  return db.selectFrom('reservations').selectAll().where('id', 'in', ids).execute();
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
