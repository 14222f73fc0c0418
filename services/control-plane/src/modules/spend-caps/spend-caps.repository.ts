import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { SpendCapsTable } from './spend-caps.table.ts';

// Counts past the largest bigint stop there: such a cap is long exceeded either way.
const MAX = sql.raw('9223372036854775807');

type Db = Kysely<Database> | Transaction<Database>;

export interface CapRow {
  id: string;
  account_id: string;
  key_id: string | null;
  set_by: SpendCapsTable['set_by'];
  unit: SpendCapsTable['unit'];
  period: SpendCapsTable['period'];
  amount: bigint;
}

const CAP_COLUMNS = ['id', 'account_id', 'key_id', 'set_by', 'unit', 'period', 'amount'] as const;

/** Every cap on the account and on its keys, with its timezone. */
export async function selectCapsOfAccounts(
  db: Db,
  accountIds: readonly string[],
): Promise<{ caps: CapRow[]; zones: Map<string, string> }> {
  if (accountIds.length === 0) return { caps: [], zones: new Map() };
  const [caps, zones] = await Promise.all([
    db.selectFrom('spend_caps').select(CAP_COLUMNS).where('account_id', 'in', accountIds).execute(),
    db
      .selectFrom('spend_cap_accounts')
      .select(['account_id', 'time_zone'])
      .where('account_id', 'in', accountIds)
      .execute(),
  ]);
  return { caps, zones: new Map(zones.map((row) => [row.account_id, row.time_zone])) };
}

export async function upsertTimeZone(db: Db, accountId: string, timeZone: string, now: Date): Promise<void> {
  await db
    .insertInto('spend_cap_accounts')
    .values({ account_id: accountId, time_zone: timeZone, updated_at: now })
    .onConflict((conflict) =>
      conflict.column('account_id').doUpdateSet({ time_zone: timeZone, updated_at: now }),
    )
    .execute();
}

export interface CapKey {
  account_id: string;
  key_id: string | null;
  set_by: SpendCapsTable['set_by'];
  unit: SpendCapsTable['unit'];
  period: SpendCapsTable['period'];
}

/** Sets one party's cap (amount) or removes it (null). Returns whether anything changed. */
export async function writeCap(db: Db, key: CapKey, amount: bigint | null, now: Date): Promise<void> {
  await db
    .deleteFrom('spend_caps')
    .where('account_id', '=', key.account_id)
    .where((where) => (key.key_id === null ? where('key_id', 'is', null) : where('key_id', '=', key.key_id)))
    .where('set_by', '=', key.set_by)
    .where('unit', '=', key.unit)
    .where('period', '=', key.period)
    .execute();
  if (amount === null) return;
  await db
    .insertInto('spend_caps')
    .values({ ...key, amount, updated_at: now })
    .execute();
}

export interface UsageRow {
  reservation_id: string;
  key_id: string;
  counted_at: Date;
  credits: bigint;
  tokens: bigint;
}

/** What the account's calls counted since `since` (released calls count nothing): the rolling window's. */
export async function selectUsageSince(db: Db, accountId: string, since: Date): Promise<UsageRow[]> {
  return db
    .selectFrom('spend_cap_usage')
    .select(['reservation_id', 'key_id', 'counted_at', 'credits', 'tokens'])
    .where('account_id', '=', accountId)
    .where('counted_at', '>=', since)
    .where('state', '!=', 'released')
    .execute();
}

/** spend_cap_counters.subject of the whole account's sums (a key's are its id). */
export const ACCOUNT_SUBJECT = '00000000-0000-0000-0000-000000000000';

export interface CounterRow {
  subject: string;
  period: 'day' | 'week' | 'month';
  window_start: Date;
  window_end: Date;
  credits: bigint;
  tokens: bigint;
}

/** The account's calendar sums of windows ending after `since` (of these keys and the account's only). */
export async function selectCounters(
  db: Db,
  accountId: string,
  since: Date,
  keyIds?: readonly string[],
): Promise<CounterRow[]> {
  let query = db
    .selectFrom('spend_cap_counters')
    .select(['subject', 'period', 'window_start', 'window_end', 'credits', 'tokens'])
    .where('account_id', '=', accountId)
    .where('window_end', '>', since);
  if (keyIds) query = query.where('subject', 'in', [ACCOUNT_SUBJECT, ...keyIds]);
  return query.execute();
}

/** A call's share of one calendar sum. */
export interface CounterDelta {
  account_id: string;
  subject: string;
  period: 'day' | 'week' | 'month';
  window_start: Date;
  window_end: Date;
  credits: bigint;
  tokens: bigint;
}

/** Sums deltas per counter, in one order for every writer (the row locks never cross). */
function mergeDeltas(deltas: readonly CounterDelta[]): CounterDelta[] {
  const merged = new Map<string, CounterDelta>();
  for (const delta of deltas) {
    const name = `${delta.account_id}|${delta.subject}|${delta.period}|${delta.window_start.toISOString()}`;
    const known = merged.get(name);
    if (known) {
      known.credits += delta.credits;
      known.tokens += delta.tokens;
    } else merged.set(name, { ...delta });
  }
  return [...merged]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, delta]) => delta)
    .filter((delta) => delta.credits !== 0n || delta.tokens !== 0n);
}

/** Adds to the calendar sums (creating those a window has not had yet). */
export async function addToCounters(db: Db, deltas: readonly CounterDelta[]): Promise<void> {
  const rows = mergeDeltas(deltas);
  if (rows.length === 0) return;
  await db
    .insertInto('spend_cap_counters')
    .values(rows)
    .onConflict((conflict) =>
      conflict.columns(['account_id', 'subject', 'period', 'window_start']).doUpdateSet((update) => ({
        credits: sql<bigint>`${update.ref('spend_cap_counters.credits')} + ${update.ref('excluded.credits')}`,
        tokens: sql<bigint>`${update.ref('spend_cap_counters.tokens')} + ${update.ref('excluded.tokens')}`,
      })),
    )
    .execute();
}

export interface NewUsage {
  reservation_id: string;
  account_id: string;
  key_id: string;
  counted_at: Date;
  credits: bigint;
  tokens: bigint;
  prices: bigint[] | null;
  /** The starts of the day, week and month it counts in. */
  windows: Date[];
}

/** Records what reserved calls count: each call (for its settlement and the rolling window), and the sums. */
export async function insertUsage(db: Db, rows: NewUsage[], deltas: readonly CounterDelta[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('spend_cap_usage')
    .values(rows)
    .onConflict((conflict) => conflict.column('reservation_id').doNothing())
    .execute();
  await addToCounters(db, deltas);
}

export interface FinishedUsage {
  reservation_id: string;
  state: 'settled' | 'released' | 'held';
  input: bigint;
  output: bigint;
  cache_read: bigint;
  cache_write: bigint;
  cache_write_1h: bigint;
}

const PERIODS = ['day', 'week', 'month'] as const;

/**
 * Corrects what finished calls count: a settled call every part it used, each at the price
 * counted with it, plus the price per call; a released one nothing; a held one its estimate
 * (kept). The calendar sums the call counted in change by the same difference, in the same
 * transaction. A call counted in no cap has no row, and nothing happens.
 */
export async function finishUsage(db: Kysely<Database>, rows: FinishedUsage[]): Promise<void> {
  if (rows.length === 0) return;
  const items = JSON.stringify(
    rows.map((row) => ({
      reservation_id: row.reservation_id,
      state: row.state,
      parts: [row.input, row.output, row.cache_read, row.cache_write, row.cache_write_1h].map(String),
    })),
  );
  await db.transaction().execute(async (trx) => {
    // `was` locks each row before reading what it counted, so the difference is against the
    // count a concurrent finish may just have written.
    const changed = await sql<{
      account_id: string;
      key_id: string;
      windows: Date[] | null;
      credits: string;
      tokens: string;
    }>`
      with f as (
        select (r->>'reservation_id')::uuid as reservation_id, r->>'state' as state,
               array(select jsonb_array_elements_text(r->'parts')::numeric) as p
        from jsonb_array_elements(${items}::jsonb) r),
      was as materialized (
        select u.reservation_id, u.credits, u.tokens from spend_cap_usage u
        where u.reservation_id in (select reservation_id from f) and u.state in ('reserved', 'held')
        order by u.reservation_id for update)
      update spend_cap_usage u
      set state = f.state,
          tokens = case when f.state = 'settled' then least(f.p[1] + f.p[2] + f.p[3] + f.p[4] + f.p[5], ${MAX})::bigint
                        when f.state = 'released' then 0 else u.tokens end,
          credits = case when f.state = 'settled' then least(coalesce(u.prices[6] + f.p[1] * u.prices[1]
                           + f.p[2] * u.prices[2] + f.p[3] * u.prices[3] + f.p[4] * u.prices[4]
                           + f.p[5] * u.prices[5], 0), ${MAX})::bigint
                         when f.state = 'released' then 0 else u.credits end
      from f join was using (reservation_id)
      where u.reservation_id = f.reservation_id and u.state in ('reserved', 'held')
      returning u.account_id, u.key_id, u.windows,
                (u.credits - was.credits)::text as credits, (u.tokens - was.tokens)::text as tokens
    `.execute(trx);
    const deltas = changed.rows.flatMap((row) => {
      const credits = BigInt(row.credits);
      const tokens = BigInt(row.tokens);
      if (!row.windows || (credits === 0n && tokens === 0n)) return [];
      return PERIODS.flatMap((period, index) => {
        const start = row.windows?.[index];
        if (!start) return [];
        return [ACCOUNT_SUBJECT, row.key_id].map((subject) => ({
          account_id: row.account_id,
          subject,
          period,
          window_start: start,
          // Only an existing sum changes: the reservation created it.
          window_end: start,
          credits,
          tokens,
        }));
      });
    });
    await correctCounters(trx, deltas);
  });
}

/** Adds finished calls' differences to sums that exist, locking them in one order. */
async function correctCounters(db: Db, deltas: readonly CounterDelta[]): Promise<void> {
  const rows = mergeDeltas(deltas);
  if (rows.length === 0) return;
  const items = JSON.stringify(
    rows.map((row) => ({
      a: row.account_id,
      s: row.subject,
      p: row.period,
      w: row.window_start.toISOString(),
      c: row.credits.toString(),
      t: row.tokens.toString(),
    })),
  );
  await sql`
    with d as (
      select (r->>'a')::uuid as account_id, (r->>'s')::uuid as subject, r->>'p' as period,
             (r->>'w')::timestamptz as window_start, (r->>'c')::bigint as credits, (r->>'t')::bigint as tokens
      from jsonb_array_elements(${items}::jsonb) r),
    locked as materialized (
      select c.account_id, c.subject, c.period, c.window_start from spend_cap_counters c
      join d using (account_id, subject, period, window_start)
      order by c.account_id, c.subject, c.period, c.window_start for update of c)
    update spend_cap_counters c
    set credits = c.credits + d.credits, tokens = c.tokens + d.tokens
    from d join locked using (account_id, subject, period, window_start)
    where c.account_id = d.account_id and c.subject = d.subject and c.period = d.period
      and c.window_start = d.window_start
  `.execute(db);
}

/**
 * Forgets what no cap reads any more: finished calls counted before `callsBefore` (past the
 * rolling window; a call in flight or held keeps its row until it finishes), any call counted
 * before `before`, and calendar sums of windows that ended before `before` (at most `limit` rows
 * of each).
 */
export async function pruneUsage(
  db: Db,
  cutoffs: { callsBefore: Date; before: Date },
  limit: number,
): Promise<number> {
  const calls = await sql`
    delete from spend_cap_usage where reservation_id in (
      select reservation_id from spend_cap_usage
      where counted_at < ${cutoffs.before}
         or (counted_at < ${cutoffs.callsBefore} and state in ('settled', 'released'))
      limit ${limit})
  `.execute(db);
  const counters = await sql`
    delete from spend_cap_counters where (account_id, subject, period, window_start) in (
      select account_id, subject, period, window_start from spend_cap_counters
      where window_end < ${cutoffs.before} limit ${limit})
  `.execute(db);
  return Number(calls.numAffectedRows ?? 0n) + Number(counters.numAffectedRows ?? 0n);
}
