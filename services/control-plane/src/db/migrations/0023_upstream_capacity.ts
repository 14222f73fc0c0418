import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// An upstream of an alias may carry the provider's limits on the operator's account (docs/routing.md):
// calls at once and calls per minute, counted across all gateways; an upstream at either is skipped.
// Null: no limit.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table alias_upstreams
      add column max_concurrency integer check (max_concurrency > 0),
      add column requests_per_minute integer check (requests_per_minute > 0);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table alias_upstreams drop column max_concurrency, drop column requests_per_minute;
  `.execute(db);
}
