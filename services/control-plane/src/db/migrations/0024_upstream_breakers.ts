import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// Each gateway reports, with its heartbeat, the upstreams whose circuit breaker is open or that a
// provider benched with Retry-After (docs/routing.md): admins see them, with the reasons.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table status_gateways add column upstream_breakers jsonb not null default '[]'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table status_gateways drop column upstream_breakers`.execute(db);
}
