import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// Spend caps (docs/billing/spend-caps.md): at most so many credits or tokens per rolling 5 hours,
// calendar day, week or month, on a key or on a whole account. Each cap is set by one party
// (the customer, its reseller, or an admin) and only that party or a higher one changes it; every
// cap applies. Calendar windows are in the account's timezone (spend_cap_accounts; UTC without a
// row).
//
// spend_cap_usage is what each call of an account with caps counted: its estimate while it runs,
// what it used once settled (nothing once released), at the instant it was reserved (the control
// plane's clock). Rows older than the longest window are of no use and may be deleted.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table spend_cap_accounts (
      account_id uuid primary key references accounts(id) on delete cascade,
      time_zone text not null default 'UTC',
      updated_at timestamptz not null default now()
    );

    create table spend_caps (
      id uuid primary key default gen_random_uuid(),
      account_id uuid not null references accounts(id) on delete cascade,
      key_id uuid references api_keys(id) on delete cascade,
      set_by text not null check (set_by in ('customer', 'reseller', 'admin')),
      unit text not null check (unit in ('credits', 'tokens')),
      period text not null check (period in ('5h', 'day', 'week', 'month')),
      amount bigint not null check (amount > 0),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index spend_caps_one_per_party on spend_caps
      (account_id, coalesce(key_id, '00000000-0000-0000-0000-000000000000'::uuid), set_by, unit, period);

    create table spend_cap_usage (
      reservation_id uuid primary key,
      account_id uuid not null,
      key_id uuid not null,
      counted_at timestamptz not null,
      credits bigint not null,
      tokens bigint not null,
      -- The alias's prices when counted (input, output, cache read, cache write, 1-hour cache
      -- write, per call); null: no credit price.
      prices bigint[],
      state text not null default 'reserved' check (state in ('reserved', 'settled', 'released', 'held'))
    );
    create index spend_cap_usage_account_idx on spend_cap_usage (account_id, counted_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table spend_cap_usage, spend_caps, spend_cap_accounts`.execute(db);
}
