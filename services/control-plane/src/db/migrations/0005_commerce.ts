import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- Admin-defined codes. held counts redemptions held by unpaid orders plus those consumed by
    -- paid ones; the guarded update "held < total_limit" is what keeps a limit under concurrency.
    create table promotions (
      id uuid primary key default gen_random_uuid(),
      code text not null unique check (code = upper(code) and length(code) between 1 and 64),
      kind text not null check (kind in ('percent_off', 'amount_off', 'bonus_tokens', 'bonus_credit')),
      percent_off integer check (percent_off between 1 and 100),
      amount_off bigint check (amount_off > 0),
      currency text,
      exponent integer check (exponent between 0 and 18),
      bonus bigint check (bonus > 0),
      starts_at timestamptz,
      ends_at timestamptz,
      package_ids text[],
      total_limit integer check (total_limit > 0),
      per_account_limit integer check (per_account_limit > 0),
      min_amount bigint check (min_amount >= 0),
      held integer not null default 0 check (held >= 0),
      active boolean not null default true,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      check (total_limit is null or held <= total_limit)
    );

    create table orders (
      id uuid primary key,
      account_id uuid not null references accounts(id),
      package_id text not null references packages(id),
      status text not null check (status in ('pending', 'paid', 'expired', 'cancelled', 'failed', 'refunded')),
      provider text not null,
      list_amount bigint not null check (list_amount >= 0),
      discount_amount bigint not null check (discount_amount >= 0),
      amount bigint not null check (amount >= 0),
      currency text not null,
      exponent integer not null,
      tokens bigint not null check (tokens > 0),
      bonus_tokens bigint not null default 0 check (bonus_tokens >= 0),
      bonus_credits bigint not null default 0 check (bonus_credits >= 0),
      promotion_id uuid references promotions(id),
      promotion_code text,
      reference text not null unique,
      entitlement_id uuid,
      expires_at timestamptz not null,
      paid_at timestamptz,
      closed_at timestamptz,
      refunded_tokens bigint,
      refunded_credits bigint,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index orders_account_idx on orders (account_id, created_at desc, id desc);
    create index orders_created_idx on orders (created_at desc, id desc);
    create index orders_pending_idx on orders (expires_at) where status = 'pending';

    create table promotion_redemptions (
      order_id uuid primary key references orders(id),
      promotion_id uuid not null references promotions(id),
      account_id uuid not null,
      status text not null check (status in ('held', 'consumed', 'returned')),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index promotion_redemptions_account_idx on promotion_redemptions (promotion_id, account_id);

    -- One payment per order, started once; the provider's own id once it has one.
    create table payments (
      order_id uuid primary key references orders(id),
      provider text not null,
      status text not null check (status in ('pending', 'succeeded', 'failed', 'refunded')),
      provider_payment_id text,
      redirect_url text,
      amount bigint not null,
      currency text not null,
      exponent integer not null,
      failure_reason text,
      refund_reference text,
      checked_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (provider, provider_payment_id)
    );
    create index payments_pending_idx on payments (checked_at nulls first) where status = 'pending';

    -- Every provider notification seen (accepted or not): replays are recognised by id.
    create table payment_events (
      provider text not null,
      event_id text not null,
      type text not null,
      order_id uuid,
      outcome text not null,
      created_at timestamptz not null default now(),
      primary key (provider, event_id)
    );

    -- Admin actions of the commerce area share the audit table of key reveals.
    alter table key_reveal_audit add column target_type text, add column target_id text, add column details jsonb;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table key_reveal_audit drop column target_type, drop column target_id, drop column details;
    drop table payment_events, payments, promotion_redemptions, orders, promotions;
  `.execute(db);
}
