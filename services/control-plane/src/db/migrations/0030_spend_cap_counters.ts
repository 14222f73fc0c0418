import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// Spend caps count calendar windows (day, week, month in the account's timezone) in running sums,
// one row per subject (a key, or the zero uuid for the whole account) and window, so that judging
// a call reads a few sums instead of every call of the window. spend_cap_usage keeps each call
// for its settlement and for the rolling 5 hours, with the windows it counted in.
//
// Calls counted before are summed here, their windows by Postgres's timezone database.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table spend_cap_usage add column windows timestamptz[];

    create table spend_cap_counters (
      account_id uuid not null,
      subject uuid not null,
      period text not null check (period in ('day', 'week', 'month')),
      window_start timestamptz not null,
      window_end timestamptz not null,
      credits bigint not null,
      tokens bigint not null,
      primary key (account_id, subject, period, window_start)
    );
    create index spend_cap_counters_end_idx on spend_cap_counters (window_end);

    update spend_cap_usage u
    set windows = array[
      date_trunc('day', u.counted_at at time zone z.tz) at time zone z.tz,
      date_trunc('week', u.counted_at at time zone z.tz) at time zone z.tz,
      date_trunc('month', u.counted_at at time zone z.tz) at time zone z.tz]
    from (select u2.reservation_id, coalesce(a.time_zone, 'UTC') as tz
          from spend_cap_usage u2 left join spend_cap_accounts a on a.account_id = u2.account_id) z
    where z.reservation_id = u.reservation_id;

    insert into spend_cap_counters (account_id, subject, period, window_start, window_end, credits, tokens)
    select u.account_id, s.subject, w.period, w.local_start at time zone z.tz,
           (w.local_start + w.step) at time zone z.tz, sum(u.credits), sum(u.tokens)
    from spend_cap_usage u
    join lateral (select coalesce((select time_zone from spend_cap_accounts a
                                   where a.account_id = u.account_id), 'UTC') as tz) z on true
    cross join lateral (values
      ('day', date_trunc('day', u.counted_at at time zone z.tz), interval '1 day'),
      ('week', date_trunc('week', u.counted_at at time zone z.tz), interval '1 week'),
      ('month', date_trunc('month', u.counted_at at time zone z.tz), interval '1 month')
    ) w(period, local_start, step)
    cross join lateral (values (u.key_id), ('00000000-0000-0000-0000-000000000000'::uuid)) s(subject)
    group by 1, 2, 3, 4, 5;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table spend_cap_counters;
    alter table spend_cap_usage drop column windows;
  `.execute(db);
}
