import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// Reports that stay fast as the reservations table grows (docs/decisions/usage-rollup.md):
// - Activity pages walk (account_id, created_at desc, id desc, key_id) and continue after a
//   (created_at, id) cursor as a row comparison, so a deep page costs what the first one does.
// - The usage summary reads a rollup per account, UTC day of creation and alias of every call
//   settled before a watermark, plus the few calls settled since (found by finished_at, so a call
//   created long ago but settled late is never missed or counted twice). The rollup is advanced
//   by a periodic job, never by the reserve/settle functions. What the hot path pays is one index
//   entry per settle (the settled index).

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop index reservations_account_idx;
    -- key_id last: one key's page checks it in the index and reads only that key's rows from the
    -- table, without an index of its own that every reservation would pay for.
    create index reservations_account_idx on reservations (account_id, created_at desc, id desc, key_id);
    create index reservations_settled_idx on reservations (account_id, finished_at) where status = 'settled';

    create table usage_daily (
      account_id uuid not null,
      day date not null,
      alias text not null,
      requests bigint not null,
      input_tokens bigint not null,
      output_tokens bigint not null,
      charged_tokens bigint not null,
      charged_credits bigint not null,
      primary key (account_id, day, alias)
    );

    -- One row: every call settled before this instant is in usage_daily, none after it.
    create table usage_rollup_state (
      id boolean primary key default true check (id),
      watermark timestamptz not null,
      advanced_at timestamptz
    );
    insert into usage_rollup_state (watermark) values ('-infinity');
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table usage_rollup_state, usage_daily;
    drop index reservations_settled_idx;
    drop index reservations_account_idx;
    create index reservations_account_idx on reservations (account_id, created_at desc);
  `.execute(db);
}
