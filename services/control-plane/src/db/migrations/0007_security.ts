import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.

/** Operator-set maxima of the ceilings a customer may give the keys of one account (null = default). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table account_key_limits (
      account_id uuid primary key references accounts(id) on delete cascade,
      max_request_bytes integer check (max_request_bytes > 0),
      max_output_tokens integer check (max_output_tokens > 0),
      requests_per_minute integer check (requests_per_minute > 0),
      concurrency integer check (concurrency > 0),
      updated_at timestamptz not null default now()
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table account_key_limits`.execute(db);
}
