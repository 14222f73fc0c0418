import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// A provider may name several credentials, a pool the gateway spreads calls over (docs/routing.md).
// credential_refs holds the whole pool when the provider names more than one; credential_ref stays
// its first name, so that a provider row read without the pool still names a working credential.
// Each gateway reports, with its heartbeat, the credentials it took out of rotation because their
// provider refused them (names, never values): admins see them beside the live gateways.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table providers add column credential_refs text[]
      check (credential_refs is null or cardinality(credential_refs) between 2 and 16);
    alter table status_gateways add column refused_credentials jsonb not null default '[]';
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table status_gateways drop column refused_credentials;
    alter table providers drop column credential_refs;
  `.execute(db);
}
