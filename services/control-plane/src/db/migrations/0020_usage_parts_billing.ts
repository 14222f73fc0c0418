import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// Settling by usage part (src/db/functions/finish.sql): the settle and beyond-the-reservation
// functions take the parts as one array instead of input and output, and the hot tier's persist
// takes the cache parts too, so their old signatures go.
//
// The usage rollup is kept per key as well as per alias (summaries by key), with the cache parts:
// it is derived data, so it is emptied and its watermark reset, and the next pass rebuilds it
// from the reservations (docs/decisions/usage-rollup.md).

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop function if exists tollgate_settle_legs(reservations, bigint, bigint);
    drop function if exists tollgate_charge_available(uuid, text, uuid, bigint, bigint, bigint);
    drop function if exists tollgate_hot_persist(uuid[], uuid[], uuid[], text[], text[], text[], text[],
      integer[], timestamp with time zone[], bigint[], bigint[], text[], bigint[], bigint[], bigint[], bigint[],
      bigint[], bigint[], bigint[], bigint[], uuid[], integer[], uuid[], bigint[]);

    truncate usage_daily;
    alter table usage_daily add column key_id uuid not null;
    alter table usage_daily drop constraint usage_daily_pkey;
    alter table usage_daily add primary key (account_id, day, alias, key_id);
    update usage_rollup_state set watermark = '-infinity', advanced_at = null;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // The functions folder defines what is in force; the old signatures are not restored.
  await sql`
    truncate usage_daily;
    alter table usage_daily drop constraint usage_daily_pkey;
    alter table usage_daily drop column key_id;
    alter table usage_daily add primary key (account_id, day, alias);
    update usage_rollup_state set watermark = '-infinity', advanced_at = null;
  `.execute(db);
}
