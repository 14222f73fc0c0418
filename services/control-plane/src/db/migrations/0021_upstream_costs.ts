import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// The operator's own cost price of each upstream of an alias (docs/routing.md, margin), in credits
// per token of each usage part and per call, like the alias's price: the margin report prices the
// usage each upstream served at it. An upstream without a row has no cost price (its cost is not
// known). Keyed by alias and upstream, so that the one-upstream shorthand has one too.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table upstream_costs (
      alias text not null references model_aliases(alias) on delete cascade,
      provider_id text not null,
      upstream_model text not null,
      input_cost bigint not null check (input_cost >= 0),
      output_cost bigint not null check (output_cost >= 0),
      cache_read_cost bigint not null check (cache_read_cost >= 0),
      cache_write_cost bigint not null check (cache_write_cost >= 0),
      cache_write_1h_cost bigint not null check (cache_write_1h_cost >= 0),
      request_cost bigint not null check (request_cost >= 0),
      primary key (alias, provider_id, upstream_model)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table upstream_costs`.execute(db);
}
