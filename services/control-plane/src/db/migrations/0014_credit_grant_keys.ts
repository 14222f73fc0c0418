import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// A credit grant sent with an Idempotency-Key is granted once: the key is claimed in the grant's
// own transaction, and a repeat finds it and grants nothing. (Package grants keep theirs on the
// entitlement they create; a credit grant creates no row of its own but the ledger's, and the
// ledger is too large to index for the few grants that carry a key.)

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table credit_grant_keys (
      idempotency_key text primary key,
      account_id uuid not null references accounts(id),
      amount bigint not null,
      created_at timestamptz not null default now()
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table credit_grant_keys`.execute(db);
}
