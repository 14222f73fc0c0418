import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// The provider kinds are the application's list (PROVIDER_KINDS), checked wherever a provider is
// written (the catalogue file, the admin routes): a new kind needs no migration.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table providers drop constraint if exists providers_kind_check`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table providers add constraint providers_kind_check check (kind in ('anthropic', 'openai'))
  `.execute(db);
}
