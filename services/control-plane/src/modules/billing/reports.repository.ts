/** Reports over the reservations: usage summaries and their rollup, write-offs, margin. */
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

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
 * Settled usage per day (of creation, in the account's timezone) and alias or key, for the days in
 * [from, end) (YYYY-MM-DD): the rollup of calls settled before its watermark plus the calls settled
 * since, in one snapshot. Input is input outside any cache (calls settled before usage was kept in
 * parts: every input token), the cache parts beside it. Also answers the timezone.
 */
export async function selectUsageSummary(
  db: Kysely<Database>,
  accountId: string,
  from: string,
  end: string,
  by: SummaryGrouping = 'alias',
): Promise<{ timeZone: string; rows: UsageSummaryDbRow[] }> {
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
      const zone = await rollupZone(trx, accountId);
      const result = await sql<UsageSummaryDbRow>`
        with parts as (
          select day, ${name} as name, requests, input_tokens, output_tokens, cache_read_tokens,
                 cache_write_tokens, cache_write_1h_tokens, charged_tokens, charged_credits
          from usage_daily
          where account_id = ${accountId}::uuid and day >= ${from}::date and day < ${end}::date
          union all
          select (created_at at time zone ${zone})::date, ${name}, 1, coalesce(input_tokens, 0),
                 coalesce(output_tokens, 0), coalesce(cache_read_tokens, 0), coalesce(cache_write_tokens, 0),
                 coalesce(cache_write_1h_tokens, 0), charged_tokens, charged_credits
          from reservations
          where account_id = ${accountId}::uuid and status = 'settled'
            and finished_at >= ${watermark}::timestamptz
            and created_at >= (${from}::date::timestamp at time zone ${zone})
            and created_at < (${end}::date::timestamp at time zone ${zone})
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
      return { timeZone: zone, rows: result.rows };
    });
}

/** The timezone of each account counted in another than UTC (tollgate_day_zone). */
const KNOWN_ZONES = sql`
  select account_id, tollgate_day_zone(time_zone) as time_zone from spend_cap_accounts where time_zone <> 'UTC'
`;

/** The timezone the account's usage days are counted in. */
async function rollupZone(db: Db, accountId: string): Promise<string> {
  const result = await sql<{ zone: string }>`
    select tollgate_day_zone((select time_zone from spend_cap_accounts where account_id = ${accountId}::uuid)) as zone
  `.execute(db);
  return result.rows[0]!.zone;
}

/**
 * Counts an account's rolled-up calls again in its timezone (after it changed, in the same
 * transaction): its rows are replaced by its calls settled before the watermark, by day of creation. Waits for
 * a pass under way (it holds the state row) and holds one off until it commits. Reads every
 * settled call of the account once (its settled index).
 */
export async function recountAccountUsage(trx: Transaction<Database>, accountId: string): Promise<void> {
  const state = await sql<{ watermark: string }>`
    select watermark::text as watermark from usage_rollup_state for share
  `.execute(trx);
  const watermark = state.rows[0]!.watermark;
  const timeZone = await rollupZone(trx, accountId);
  await sql`delete from usage_daily where account_id = ${accountId}::uuid`.execute(trx);
  await sql`
    insert into usage_daily (account_id, day, alias, key_id, requests, input_tokens, output_tokens,
                             cache_read_tokens, cache_write_tokens, cache_write_1h_tokens,
                             charged_tokens, charged_credits)
    select account_id, (created_at at time zone ${timeZone})::date, alias, key_id, count(*),
           coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
           coalesce(sum(cache_read_tokens), 0), coalesce(sum(cache_write_tokens), 0),
           coalesce(sum(cache_write_1h_tokens), 0), sum(charged_tokens), sum(charged_credits)
    from reservations
    where account_id = ${accountId}::uuid and status = 'settled' and finished_at < ${watermark}::timestamptz
    group by 1, 2, 3, 4
  `.execute(trx);
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
    // A later statement: its snapshot sees every transaction that began before `to`. Each call
    // counts on its day of creation in its account's timezone (zones: the names Postgres knows).
    const settled = sql`
      select r.account_id, (r.created_at at time zone coalesce(z.time_zone, 'UTC'))::date as day, r.alias,
             r.key_id, count(*) as requests,
             coalesce(sum(r.input_tokens), 0) as input_tokens, coalesce(sum(r.output_tokens), 0) as output_tokens,
             coalesce(sum(r.cache_read_tokens), 0) as cache_read_tokens,
             coalesce(sum(r.cache_write_tokens), 0) as cache_write_tokens,
             coalesce(sum(r.cache_write_1h_tokens), 0) as cache_write_1h_tokens,
             sum(r.charged_tokens) as charged_tokens, sum(r.charged_credits) as charged_credits
    `;
    // The first pass reads the whole table; later ones walk each account's settled-index range.
    const source =
      from === null
        ? sql`${settled} from reservations r left join zones z on z.account_id = r.account_id
            where r.status = 'settled' and r.finished_at < ${to} group by 1, 2, 3, 4`
        : sql`${settled} from accounts a left join zones z on z.account_id = a.id cross join lateral (
              select * from reservations where account_id = a.id and status = 'settled'
                and finished_at >= ${from} and finished_at < ${to}) r
            group by 1, 2, 3, 4`;
    const added = await sql<{ calls: string | null }>`
      with zones as (${KNOWN_ZONES}),
      source as (${source}),
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

export interface AccountFiguresDbRow {
  account_id: string;
  credits_available: string;
  credits_reserved: string;
  tokens_remaining: string;
  tokens_reserved: string;
  /** The unexpired entitlements summed (a lease split applies to those only). */
  entitlement_ids: string[];
  spent_requests: string;
  spent_credits: string;
  spent_tokens: string;
  last_call_at: Date | null;
}

/**
 * For each account of a page: its credit and unexpired entitlement tokens (as Postgres holds them;
 * a hot-tier lease is split back out by the caller), what its calls created since `since` (a UTC
 * day's start) charged, from the usage rollup plus the calls settled after its watermark, and the
 * time of its latest call. One statement, index lookups per account: the page's size bounds it,
 * not the number of calls.
 */
export async function selectAccountFigures(
  db: Kysely<Database>,
  accountIds: readonly string[],
  since: Date,
  now: Date,
): Promise<AccountFiguresDbRow[]> {
  if (accountIds.length === 0) return [];
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      // A value, not a subquery, as in selectUsageSummary.
      const state = await sql<{ watermark: string }>`
        select watermark::text as watermark from usage_rollup_state
      `.execute(trx);
      const watermark = state.rows[0]!.watermark;
      const result = await sql<AccountFiguresDbRow>`
        select i.id as account_id,
               coalesce(c.available, 0)::text as credits_available,
               coalesce(c.reserved, 0)::text as credits_reserved,
               e.remaining::text as tokens_remaining, e.reserved::text as tokens_reserved,
               e.ids::text[] as entitlement_ids,
               u.requests::text as spent_requests, u.credits::text as spent_credits,
               u.tokens::text as spent_tokens, l.created_at as last_call_at
        from unnest(${sql.val(accountIds)}::uuid[]) as i(id)
        left join credit_balances c on c.account_id = i.id
        cross join lateral (
          select coalesce(sum(remaining), 0) as remaining, coalesce(sum(reserved), 0) as reserved,
                 coalesce(array_agg(id), '{}') as ids
          from entitlements
          where account_id = i.id and (expires_at is null or expires_at > ${now})
        ) e
        cross join lateral (
          select coalesce(sum(requests), 0) as requests, coalesce(sum(credits), 0) as credits,
                 coalesce(sum(tokens), 0) as tokens
          from (
            select requests, charged_credits as credits, charged_tokens as tokens
            from usage_daily
            where account_id = i.id and day >= (${since}::timestamptz at time zone 'UTC')::date
            union all
            select 1, charged_credits, charged_tokens
            from reservations
            where account_id = i.id and status = 'settled'
              and finished_at >= ${watermark}::timestamptz and created_at >= ${since}
          ) parts
        ) u
        left join lateral (
          select created_at from reservations where account_id = i.id
          order by created_at desc, id desc limit 1
        ) l on true
      `.execute(trx);
      return result.rows;
    });
}

/** What the operator's usage report groups by: each day, each account, or each key of one account. */
export type TotalsGrouping = 'day' | 'account' | 'key';

export interface UsageTotalsDbRow {
  day: string | null;
  account_id: string | null;
  email: string | null;
  key_id: string | null;
  key_name: string | null;
  requests: string;
  input_tokens: string;
  output_tokens: string;
  charged_tokens: string;
  charged_credits: string;
}

/**
 * Settled usage across accounts (or of one) for the days in [from, end) (YYYY-MM-DD), each call
 * on its day in its account's timezone: the rollup plus the calls settled after its watermark (one
 * settled-index range per account), grouped by day, account (largest spend first) or key.
 */
export async function selectUsageTotals(
  db: Kysely<Database>,
  query: { from: string; end: string; accountId: string | null; by: TotalsGrouping; limit: number },
): Promise<UsageTotalsDbRow[]> {
  const { from, end, accountId, by, limit } = query;
  const oneAccount = (column: string) =>
    accountId === null ? sql`true` : sql`${sql.ref(column)} = ${accountId}::uuid`;
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const state = await sql<{ watermark: string }>`
        select watermark::text as watermark from usage_rollup_state
      `.execute(trx);
      const watermark = state.rows[0]!.watermark;
      const parts = sql`
        zones as (
          select a.id as account_id,
                 case when z.time_zone is null then 'UTC' else tollgate_day_zone(z.time_zone) end as zone
          from accounts a left join spend_cap_accounts z on z.account_id = a.id
          where ${oneAccount('a.id')}
        ),
        parts as (
          select account_id, day, key_id, requests, input_tokens, output_tokens, charged_tokens, charged_credits
          from usage_daily
          where ${oneAccount('account_id')} and day >= ${from}::date and day < ${end}::date
          union all
          select r.account_id, (r.created_at at time zone zo.zone)::date, r.key_id, 1,
                 coalesce(r.input_tokens, 0), coalesce(r.output_tokens, 0), r.charged_tokens, r.charged_credits
          from zones zo cross join lateral (
            select * from reservations
            where account_id = zo.account_id and status = 'settled' and finished_at >= ${watermark}::timestamptz
              and created_at >= (${from}::date::timestamp at time zone zo.zone)
              and created_at < (${end}::date::timestamp at time zone zo.zone)
          ) r
        )`;
      const sums = sql`sum(p.requests)::text as requests, sum(p.input_tokens)::text as input_tokens,
        sum(p.output_tokens)::text as output_tokens, sum(p.charged_tokens)::text as charged_tokens,
        sum(p.charged_credits)::text as charged_credits`;
      const grouped =
        by === 'day'
          ? sql`select to_char(p.day, 'YYYY-MM-DD') as day, null as account_id, null as email, null as key_id,
                  null as key_name, ${sums}
                from parts p group by p.day order by p.day`
          : by === 'account'
            ? sql`select null as day, a.id::text as account_id, a.email, null as key_id, null as key_name, ${sums}
                  from parts p join accounts a on a.id = p.account_id
                  group by a.id order by sum(p.charged_credits) desc, sum(p.charged_tokens) desc, a.id
                  limit ${limit}`
            : sql`select null as day, p.account_id::text as account_id, null as email, p.key_id::text as key_id,
                    k.name as key_name, ${sums}
                  from parts p left join api_keys k on k.id = p.key_id
                  group by p.account_id, p.key_id, k.name
                  order by sum(p.charged_credits) desc, sum(p.charged_tokens) desc, p.key_id
                  limit ${limit}`;
      const result = await sql<UsageTotalsDbRow>`with ${parts} ${grouped}`.execute(trx);
      return result.rows;
    });
}
