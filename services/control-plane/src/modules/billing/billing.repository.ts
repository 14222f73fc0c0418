import { AppError } from '@tollgate/errors';
import { type FinishItem, QuantityString, ReserveRefusalCode } from '@tollgate/schemas';
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
      'select tollgate_finish_unflushed($1::jsonb) as results',
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
  const result = await sql<{
    results: unknown;
  }>`select tollgate_finish(${JSON.stringify(rows)}::jsonb) as results`.execute(trx);
  return fromSql(z.array(FinishRowResult).length(rows.length), result.rows[0]?.results, 'tollgate_finish');
}

/** The hot tier's part in a balance change made in Postgres (see hot-tier.ts, recallInTransaction). */
/**
 * Serialises every balance change of one account (R18, tollgate_lock_account). The account's row
 * lock alone: the hot tier's own lease operations take it; any other change of balances locks
 * through engines.ts (changeBalances, balancesIn), which also recalls the account's lease.
 */
export async function lockAccountRow(trx: Transaction<Database>, accountId: string): Promise<void> {
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

export interface UsageSummaryDbRow {
  day: string;
  /** The alias, or the key id when summarised by key. */
  name: string;
  requests: number;
  input_tokens: bigint;
  output_tokens: bigint;
  cache_read_tokens: bigint;
  cache_write_tokens: bigint;
  cache_write_1h_tokens: bigint;
  charged_tokens: bigint;
  charged_credits: bigint;
}

/** What a usage summary groups calls by, beside the day. */
export type SummaryGrouping = 'alias' | 'key';

/**
 * Settled usage per UTC day (of creation) and alias or key, for calls created in [from, end): the
 * rollup of calls settled before its watermark plus the calls settled since, in one snapshot.
 * Input is input outside any cache (calls settled before usage was kept in parts: every input
 * token), the cache parts beside it.
 */
export async function selectUsageSummary(
  db: Kysely<Database>,
  accountId: string,
  from: Date,
  end: Date,
  by: SummaryGrouping = 'alias',
) {
  const name = by === 'key' ? sql`key_id::text` : sql`alias`;
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      // Read first and passed as a value: the planner then sees that few rows follow it (as a
      // subquery it guesses a third of the account's calls, and plans workers and JIT for them).
      const state = await sql<{ watermark: string }>`
        select watermark::text as watermark from usage_rollup_state
      `.execute(trx);
      const watermark = state.rows[0]!.watermark;
      const result = await sql<UsageSummaryDbRow>`
        with parts as (
          select day, ${name} as name, requests, input_tokens, output_tokens, cache_read_tokens,
                 cache_write_tokens, cache_write_1h_tokens, charged_tokens, charged_credits
          from usage_daily
          where account_id = ${accountId}::uuid
            and day >= (${from}::timestamptz at time zone 'UTC')::date
            and day < (${end}::timestamptz at time zone 'UTC')::date
          union all
          select (created_at at time zone 'UTC')::date, ${name}, 1, coalesce(input_tokens, 0),
                 coalesce(output_tokens, 0), coalesce(cache_read_tokens, 0), coalesce(cache_write_tokens, 0),
                 coalesce(cache_write_1h_tokens, 0), charged_tokens, charged_credits
          from reservations
          where account_id = ${accountId}::uuid and status = 'settled'
            and finished_at >= ${watermark}::timestamptz
            and created_at >= ${from} and created_at < ${end}
        )
        select to_char(day, 'YYYY-MM-DD') as day, name, sum(requests)::int as requests,
               sum(input_tokens)::bigint as input_tokens, sum(output_tokens)::bigint as output_tokens,
               sum(cache_read_tokens)::bigint as cache_read_tokens,
               sum(cache_write_tokens)::bigint as cache_write_tokens,
               sum(cache_write_1h_tokens)::bigint as cache_write_1h_tokens,
               sum(charged_tokens)::bigint as charged_tokens, sum(charged_credits)::bigint as charged_credits
        from parts
        group by day, name
        order by day, name
      `.execute(trx);
      return result.rows;
    });
}

/** The same summary straight from the reservations, without the rollup (for checks and tests). */
export async function selectUsageSummaryLive(
  db: Db,
  accountId: string,
  from: Date,
  end: Date,
  by: SummaryGrouping = 'alias',
) {
  const name = by === 'key' ? sql`key_id::text` : sql`alias`;
  const result = await sql<UsageSummaryDbRow>`
    select to_char(date_trunc('day', created_at at time zone 'UTC'), 'YYYY-MM-DD') as day, ${name} as name,
           count(*)::int as requests,
           coalesce(sum(input_tokens), 0)::bigint as input_tokens,
           coalesce(sum(output_tokens), 0)::bigint as output_tokens,
           coalesce(sum(cache_read_tokens), 0)::bigint as cache_read_tokens,
           coalesce(sum(cache_write_tokens), 0)::bigint as cache_write_tokens,
           coalesce(sum(cache_write_1h_tokens), 0)::bigint as cache_write_1h_tokens,
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

/**
 * Moves the rollup's watermark forward: adds every call settled in [old watermark, next) to
 * usage_daily and sets the watermark to next, in one transaction. next stays `lagMs` behind now
 * and before the start of every transaction still open, so no settle that commits later can carry
 * a finished_at (its transaction's start) below the new watermark. Returns the watermarks.
 */
export async function advanceUsageRollup(
  db: Kysely<Database>,
  lagMs: number,
): Promise<{ from: Date | null; to: Date | null; calls: number }> {
  return db.transaction().execute(async (trx) => {
    // One pass at a time across control planes. Null: nothing rolled up yet (-infinity).
    const state = await sql<{ watermark: Date | null }>`
      select nullif(watermark, '-infinity') as watermark from usage_rollup_state for update
    `.execute(trx);
    const from = state.rows[0]!.watermark;
    const next = await sql<{ next: Date }>`
      select least(clock_timestamp() - make_interval(secs => ${lagMs / 1000}),
                   (select min(xact_start) from pg_stat_activity
                    where datname = current_database() and pid <> pg_backend_pid()
                      and xact_start is not null)) as next
    `.execute(trx);
    const to = next.rows[0]!.next;
    if (from !== null && to <= from) return { from, to: from, calls: 0 };
    // A later statement: its snapshot sees every transaction that began before `to`.
    const settled = sql`
      select r.account_id, (r.created_at at time zone 'UTC')::date as day, r.alias, r.key_id, count(*) as requests,
             coalesce(sum(r.input_tokens), 0) as input_tokens, coalesce(sum(r.output_tokens), 0) as output_tokens,
             coalesce(sum(r.cache_read_tokens), 0) as cache_read_tokens,
             coalesce(sum(r.cache_write_tokens), 0) as cache_write_tokens,
             coalesce(sum(r.cache_write_1h_tokens), 0) as cache_write_1h_tokens,
             sum(r.charged_tokens) as charged_tokens, sum(r.charged_credits) as charged_credits
    `;
    // The first pass reads the whole table; later ones walk each account's settled-index range.
    const source =
      from === null
        ? sql`${settled} from reservations r where r.status = 'settled' and r.finished_at < ${to} group by 1, 2, 3, 4`
        : sql`${settled} from accounts a cross join lateral (
              select * from reservations where account_id = a.id and status = 'settled'
                and finished_at >= ${from} and finished_at < ${to}) r
            group by 1, 2, 3, 4`;
    const added = await sql<{ calls: string | null }>`
      with source as (${source}),
      added as (
        insert into usage_daily as u (account_id, day, alias, key_id, requests, input_tokens, output_tokens,
                                      cache_read_tokens, cache_write_tokens, cache_write_1h_tokens,
                                      charged_tokens, charged_credits)
        select * from source
        on conflict (account_id, day, alias, key_id) do update set
          requests = u.requests + excluded.requests,
          input_tokens = u.input_tokens + excluded.input_tokens,
          output_tokens = u.output_tokens + excluded.output_tokens,
          cache_read_tokens = u.cache_read_tokens + excluded.cache_read_tokens,
          cache_write_tokens = u.cache_write_tokens + excluded.cache_write_tokens,
          cache_write_1h_tokens = u.cache_write_1h_tokens + excluded.cache_write_1h_tokens,
          charged_tokens = u.charged_tokens + excluded.charged_tokens,
          charged_credits = u.charged_credits + excluded.charged_credits
      )
      select sum(requests)::text as calls from source
    `.execute(trx);
    await sql`update usage_rollup_state set watermark = ${to}, advanced_at = now()`.execute(trx);
    return { from, to, calls: Number(added.rows[0]?.calls ?? 0) };
  });
}

/** Written-off usage per account and alias among reservations finished in [from, end). */
export function selectWriteOffs(db: Db, from: Date, end: Date, limit: number) {
  return db
    .selectFrom('reservations')
    .select([
      'account_id',
      'alias',
      sql<string>`count(*)::text`.as('reservations'),
      sql<string>`sum(written_off_tokens)::text`.as('tokens'),
      sql<string>`sum(written_off_credits)::text`.as('credits'),
    ])
    .where('finished_at', '>=', from)
    .where('finished_at', '<', end)
    .where((eb) => eb.or([eb('written_off_tokens', '>', 0n), eb('written_off_credits', '>', 0n)]))
    .groupBy(['account_id', 'alias'])
    .orderBy(sql`sum(written_off_credits)`, 'desc')
    .orderBy(sql`sum(written_off_tokens)`, 'desc')
    .orderBy('account_id')
    .orderBy('alias')
    .limit(limit)
    .execute();
}

/**
 * Settled calls finished in [from, end), by alias and the upstream that served them (its route,
 * recorded for aliases with several upstreams; else the alias's one upstream): their usage, what they charged, and their cost at
 * the upstream's cost price (null when it has none). Integer text throughout.
 */
export async function selectMargin(db: Db, from: Date, end: Date) {
  const result = await sql<{
    alias: string;
    provider_id: string;
    upstream_model: string;
    calls: string;
    input_tokens: string;
    output_tokens: string;
    cache_read_tokens: string;
    cache_write_tokens: string;
    cache_write_1h_tokens: string;
    charged_credits: string;
    charged_tokens: string;
    cost_credits: string | null;
  }>`
    with served as (
      select r.alias,
             coalesce(rt.provider_id, a.provider_id) as provider_id,
             coalesce(rt.upstream_model, a.upstream_model) as upstream_model,
             count(*) as calls,
             sum(coalesce(r.input_tokens, 0)) as input_tokens,
             sum(coalesce(r.output_tokens, 0)) as output_tokens,
             sum(coalesce(r.cache_read_tokens, 0)) as cache_read_tokens,
             sum(coalesce(r.cache_write_tokens, 0)) as cache_write_tokens,
             sum(coalesce(r.cache_write_1h_tokens, 0)) as cache_write_1h_tokens,
             sum(r.charged_credits) as charged_credits,
             sum(r.charged_tokens) as charged_tokens
      from reservations r
      left join reservation_routes rt on rt.reservation_id = r.id
      left join model_aliases a on a.alias = r.alias
      where r.status = 'settled' and r.finished_at >= ${from} and r.finished_at < ${end}
      group by 1, 2, 3
    )
    select s.alias, s.provider_id, s.upstream_model, s.calls::text, s.input_tokens::text,
           s.output_tokens::text, s.cache_read_tokens::text, s.cache_write_tokens::text,
           s.cache_write_1h_tokens::text, s.charged_credits::text, s.charged_tokens::text,
           (s.input_tokens * c.input_cost + s.output_tokens * c.output_cost
             + s.cache_read_tokens * c.cache_read_cost + s.cache_write_tokens * c.cache_write_cost
             + s.cache_write_1h_tokens * c.cache_write_1h_cost + s.calls * c.request_cost)::text as cost_credits
    from served s
    left join upstream_costs c
      on c.alias = s.alias and c.provider_id = s.provider_id and c.upstream_model = s.upstream_model
    order by s.alias, s.provider_id, s.upstream_model
  `.execute(db);
  return result.rows;
}

/** Which upstream served each finished call that reached one; a repeat changes nothing. */
export async function recordRoutes(db: Db, items: FinishItem[]): Promise<void> {
  const rows = items.flatMap((item) =>
    item.route
      ? [
          {
            reservation_id: item.reservationId,
            provider_id: item.route.providerId,
            upstream_model: item.route.upstreamModel,
            attempts: item.route.attempts,
          },
        ]
      : [],
  );
  if (rows.length === 0) return;
  await db
    .insertInto('reservation_routes')
    .values(rows)
    .onConflict((conflict) => conflict.column('reservation_id').doNothing())
    .execute();
}
