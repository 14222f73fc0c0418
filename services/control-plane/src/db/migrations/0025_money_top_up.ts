import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// Money beside credits and credit top-ups (docs/payments.md#top-ups):
// - catalog_settings: what one credit is worth in the catalogue currency (an exact decimal) and
//   the bounds of a top-up, from the catalogue file.
// - orders of kind top_up buy credit (no package): package_id null, tokens 0, credits > 0.
//   auto_top_up_generation names the armed state an automatic top-up was charged for; unique per
//   account, so one crossing of the threshold can never make two orders; idempotency_key (the
//   Idempotency-Key of POST /top-ups) makes a form sent twice one order.
// - auto_top_ups: an account's threshold, amount, saved Stripe payment method and armed state.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table catalog_settings (
      id boolean primary key default true check (id),
      credit_currency text not null,
      credit_exponent integer not null check (credit_exponent between 0 and 18),
      credit_value text not null check (credit_value ~ '^(0|[1-9][0-9]*)(\\.[0-9]{1,18})?$'),
      top_up_min bigint check (top_up_min > 0),
      top_up_max bigint check (top_up_max > 0),
      updated_at timestamptz not null default now(),
      check (top_up_min is null or top_up_max is null or top_up_min <= top_up_max)
    )
  `.execute(db);
  await sql`alter table orders alter column package_id drop not null`.execute(db);
  await sql`alter table orders drop constraint orders_tokens_check`.execute(db);
  await sql`
    alter table orders
      add column kind text not null default 'package' check (kind in ('package', 'top_up')),
      add column credits bigint not null default 0 check (credits >= 0),
      add column save_payment_method boolean not null default false,
      add column auto_top_up_generation bigint,
      add column idempotency_key text,
      add constraint orders_kind_grants check (
        (kind = 'package' and package_id is not null and tokens > 0 and credits = 0)
        or (kind = 'top_up' and package_id is null and tokens = 0 and credits > 0)
      )
  `.execute(db);
  await sql`
    create unique index orders_auto_top_up_idx on orders (account_id, auto_top_up_generation)
      where auto_top_up_generation is not null
  `.execute(db);
  await sql`
    create unique index orders_idempotency_idx on orders (account_id, idempotency_key)
      where idempotency_key is not null
  `.execute(db);
  await sql`
    create table auto_top_ups (
      account_id uuid primary key references accounts(id),
      enabled boolean not null default false,
      threshold bigint not null check (threshold >= 0),
      amount bigint not null check (amount > 0),
      currency text not null,
      exponent integer not null,
      armed boolean not null default false,
      generation bigint not null default 0,
      stripe_customer text,
      payment_method text,
      last_failure text,
      updated_at timestamptz not null default now()
    )
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table auto_top_ups`.execute(db);
  await sql`drop index orders_auto_top_up_idx`.execute(db);
  await sql`drop index orders_idempotency_idx`.execute(db);
  await sql`
    alter table orders drop constraint orders_kind_grants, drop column kind, drop column credits,
      drop column save_payment_method, drop column auto_top_up_generation,
      drop column idempotency_key
  `.execute(db);
  await sql`alter table orders add constraint orders_tokens_check check (tokens > 0)`.execute(db);
  await sql`alter table orders alter column package_id set not null`.execute(db);
  await sql`drop table catalog_settings`.execute(db);
}
