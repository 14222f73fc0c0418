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

/** What the account's calls counted since `since` (released calls count nothing). */
export async function selectUsageSince(db: Db, accountId: string, since: Date): Promise<UsageRow[]> {
  return db
    .selectFrom('spend_cap_usage')
    .select(['reservation_id', 'key_id', 'counted_at', 'credits', 'tokens'])
    .where('account_id', '=', accountId)
    .where('counted_at', '>=', since)
    .where('state', '!=', 'released')
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
}

export async function insertUsage(db: Db, rows: NewUsage[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('spend_cap_usage')
    .values(rows)
    .onConflict((conflict) => conflict.column('reservation_id').doNothing())
    .execute();
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

/**
 * Corrects what finished calls count: a settled call every part it used, each at the price
 * counted with it, plus the price per call; a released one nothing; a held one its estimate
 * (kept). A call counted in no cap has no row, and nothing happens.
 */
export async function finishUsage(db: Db, rows: FinishedUsage[]): Promise<void> {
  if (rows.length === 0) return;
  const items = JSON.stringify(
    rows.map((row) => ({
      reservation_id: row.reservation_id,
      state: row.state,
      parts: [row.input, row.output, row.cache_read, row.cache_write, row.cache_write_1h].map(String),
    })),
  );
  await sql`
    update spend_cap_usage u
    set state = f.state,
        tokens = case when f.state = 'settled' then least(f.p[1] + f.p[2] + f.p[3] + f.p[4] + f.p[5], ${MAX})::bigint
                      when f.state = 'released' then 0 else u.tokens end,
        credits = case when f.state = 'settled' then least(coalesce(u.prices[6] + f.p[1] * u.prices[1]
                         + f.p[2] * u.prices[2] + f.p[3] * u.prices[3] + f.p[4] * u.prices[4]
                         + f.p[5] * u.prices[5], 0), ${MAX})::bigint
                       when f.state = 'released' then 0 else u.credits end
    from (select (r->>'reservation_id')::uuid as reservation_id, r->>'state' as state,
                 array(select jsonb_array_elements_text(r->'parts')::numeric) as p
          from jsonb_array_elements(${items}::jsonb) r) f
    where u.reservation_id = f.reservation_id and u.state in ('reserved', 'held')
  `.execute(db);
}

/** What calls counted before `before`, which no window reaches any more (at most `limit` rows). */
export async function pruneUsage(db: Db, before: Date, limit: number): Promise<number> {
  const result = await sql`
    delete from spend_cap_usage where reservation_id in (
      select reservation_id from spend_cap_usage where counted_at < ${before} limit ${limit})
  `.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}
