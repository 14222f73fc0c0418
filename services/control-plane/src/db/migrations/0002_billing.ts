import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table providers (
      id text primary key,
      kind text not null check (kind in ('anthropic', 'openai')),
      base_url text not null,
      credential_ref text,
      updated_at timestamptz not null default now()
    );

    create table model_aliases (
      alias text primary key,
      provider_id text not null references providers(id),
      upstream_model text not null,
      protocols text[] not null,
      published boolean not null default true,
      input_price bigint check (input_price >= 0),
      output_price bigint check (output_price >= 0),
      default_max_output_tokens integer not null check (default_max_output_tokens > 0),
      max_output_tokens integer not null check (max_output_tokens > 0),
      updated_at timestamptz not null default now()
    );

    create table packages (
      id text primary key,
      name text not null,
      tokens bigint not null check (tokens > 0),
      validity_days integer check (validity_days > 0),
      aliases text[],
      max_output_tokens integer check (max_output_tokens > 0),
      requests_per_minute integer check (requests_per_minute > 0),
      concurrency integer check (concurrency > 0),
      price_amount bigint not null check (price_amount >= 0),
      price_currency text not null,
      price_exponent integer not null check (price_exponent between 0 and 18),
      published boolean not null default true,
      updated_at timestamptz not null default now()
    );

    -- Token quota granted to an account. remaining = spendable now; reserved = held by requests
    -- in flight. Both are the running sums of this entitlement's ledger rows.
    create table entitlements (
      id uuid primary key default gen_random_uuid(),
      account_id uuid not null references accounts(id),
      package_id text references packages(id),
      aliases text[],
      granted bigint not null check (granted > 0),
      remaining bigint not null check (remaining >= 0),
      reserved bigint not null default 0 check (reserved >= 0),
      expires_at timestamptz,
      max_output_tokens integer,
      requests_per_minute integer,
      concurrency integer,
      cause text not null,
      idempotency_key text unique,
      created_at timestamptz not null default now()
    );
    create index entitlements_account_idx on entitlements (account_id, expires_at);

    -- Credit balance of an account, in integer credit units.
    create table credit_balances (
      account_id uuid primary key references accounts(id),
      available bigint not null default 0 check (available >= 0),
      reserved bigint not null default 0 check (reserved >= 0),
      updated_at timestamptz not null default now()
    );

    -- One row per metered call: the reservation, then how it finished. Also the activity log.
    create table reservations (
      id uuid primary key,
      account_id uuid not null,
      key_id uuid not null,
      alias text not null,
      surface text not null,
      status text not null check (status in ('reserved', 'settled', 'released', 'held')),
      estimate_input bigint not null default 0,
      estimate_output bigint not null default 0,
      -- [{source: 'entitlement'|'credit', entitlementId?, amount}] in draw order.
      legs jsonb not null default '[]',
      reserved_tokens bigint not null default 0,
      reserved_credits bigint not null default 0,
      input_tokens bigint,
      output_tokens bigint,
      charged_tokens bigint not null default 0,
      charged_credits bigint not null default 0,
      written_off_tokens bigint not null default 0,
      written_off_credits bigint not null default 0,
      outcome text,
      http_status integer,
      created_at timestamptz not null default now(),
      finished_at timestamptz,
      hold_reason text
    );
    create index reservations_open_idx on reservations (created_at) where status in ('reserved', 'held');
    -- Activity pages (per account, optionally filtered by key) walk this one index.
    create index reservations_account_idx on reservations (account_id, created_at desc);

    -- Append-only. Every movement of quota or credit. entitlement_id null = the credit balance.
    create table ledger_entries (
      id bigserial primary key,
      account_id uuid not null,
      entitlement_id uuid,
      kind text not null check (kind in ('grant', 'reserve', 'settle', 'release', 'hold', 'write_off', 'adjustment')),
      available_delta bigint not null default 0,
      reserved_delta bigint not null default 0,
      amount bigint not null default 0,
      reservation_id uuid,
      cause text not null,
      created_at timestamptz not null default now()
    );
    create index ledger_entries_account_idx on ledger_entries (account_id, id);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table ledger_entries, reservations, credit_balances, entitlements, packages, model_aliases, providers;
  `.execute(db);
}
