import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table accounts (
      id uuid primary key default gen_random_uuid(),
      email text not null,
      password_hash text not null,
      display_name text,
      is_admin boolean not null default false,
      is_reseller boolean not null default false,
      reseller_id uuid references accounts(id),
      status text not null default 'active' check (status in ('active', 'suspended')),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index accounts_email_key on accounts (lower(email));
    create index accounts_reseller_id_idx on accounts (reseller_id) where reseller_id is not null;

    create table sessions (
      id uuid primary key default gen_random_uuid(),
      account_id uuid not null references accounts(id),
      token_hash bytea not null unique,
      csrf_token_hash bytea not null,
      created_at timestamptz not null default now(),
      last_seen_at timestamptz not null default now(),
      expires_at timestamptz not null,
      ended_at timestamptz,
      end_reason text,
      user_agent text,
      ip text
    );
    create index sessions_account_id_idx on sessions (account_id);

    create table email_codes (
      id uuid primary key default gen_random_uuid(),
      purpose text not null check (purpose in ('register', 'password_reset')),
      email text not null,
      code_hash bytea not null,
      attempts integer not null default 0,
      expires_at timestamptz not null,
      consumed_at timestamptz,
      created_at timestamptz not null default now()
    );
    create index email_codes_lookup_idx on email_codes (purpose, lower(email), created_at desc);
    create index email_codes_hash_idx on email_codes (code_hash);

    create table outbox_emails (
      id uuid primary key default gen_random_uuid(),
      recipient text not null,
      subject text not null,
      body_text text not null,
      kind text not null,
      created_at timestamptz not null default now(),
      sent_at timestamptz,
      attempts integer not null default 0,
      last_error text
    );
    create index outbox_emails_unsent_idx on outbox_emails (created_at) where sent_at is null;

    create table throttle_buckets (
      key text primary key,
      window_started_at timestamptz not null,
      hits integer not null,
      blocked_until timestamptz
    );

    create table api_keys (
      id uuid primary key default gen_random_uuid(),
      account_id uuid not null references accounts(id),
      name text not null,
      lookup_hash bytea not null unique,
      secret_ciphertext bytea,
      recoverable boolean not null default true,
      mask text not null,
      status text not null default 'active' check (status in ('active', 'disabled', 'revoked')),
      scope text[],
      expires_at timestamptz,
      max_request_bytes integer not null check (max_request_bytes > 0),
      max_output_tokens integer not null check (max_output_tokens > 0),
      requests_per_minute integer not null check (requests_per_minute > 0),
      concurrency integer not null check (concurrency > 0),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      rotated_at timestamptz,
      revoked_at timestamptz
    );
    create index api_keys_account_id_idx on api_keys (account_id, created_at);

    create table key_reveal_audit (
      id bigserial primary key,
      key_id uuid,
      account_id uuid not null,
      session_id uuid,
      outcome text not null,
      ip text,
      user_agent text,
      created_at timestamptz not null default now()
    );
    create index key_reveal_audit_account_idx on key_reveal_audit (account_id, created_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table key_reveal_audit, api_keys, throttle_buckets, outbox_emails, email_codes, sessions, accounts;
  `.execute(db);
}
