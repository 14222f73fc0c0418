import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// Two-factor sign-in (docs/security.md): an account's TOTP secret, encrypted under
// KEY_ENCRYPTION_KEY, pending until confirmed with a code; the last time step used, so a code
// is accepted once; single-use recovery codes, kept as keyed hashes only.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table two_factor_secrets (
      account_id uuid primary key references accounts(id),
      secret_ciphertext bytea not null,
      confirmed_at timestamptz,
      last_used_step bigint,
      created_at timestamptz not null default now()
    );
    create table two_factor_recovery_codes (
      id uuid primary key default gen_random_uuid(),
      account_id uuid not null references accounts(id),
      code_hash bytea not null,
      used_at timestamptz,
      created_at timestamptz not null default now(),
      unique (account_id, code_hash)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table two_factor_recovery_codes; drop table two_factor_secrets`.execute(db);
}
