import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// Weighted packages (docs/billing/rules.md R2b): a package counts raw tokens (as every package did)
// or weighted tokens, each token of an alias costing the alias's package rate in package units. An
// entitlement keeps the counting of the package it was granted from. The draw functions take the
// alias's rate, so their old signatures go (src/db/functions/draw.sql defines the new ones).

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table model_aliases add column package_rate bigint not null default 1
      constraint model_aliases_package_rate_check check (package_rate between 1 and 1000000000);
    alter table packages add column counts text not null default 'tokens'
      constraint packages_counts_check check (counts in ('tokens', 'weighted'));
    alter table entitlements add column weighted boolean not null default false;
    drop function if exists tollgate_draw_plan(uuid, text, bigint);
    drop function if exists tollgate_usable_entitlements(uuid, text);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // The functions folder defines what is in force; the old signatures are not restored.
  await sql`
    alter table entitlements drop column weighted;
    alter table packages drop column counts;
    alter table model_aliases drop column package_rate;
  `.execute(db);
}
