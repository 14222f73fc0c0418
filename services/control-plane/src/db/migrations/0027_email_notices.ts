import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// Billing emails (docs/emails.md): each customer's opt-outs, the notices already sent (one row per
// kind and subject, so a purchase or a fall below the threshold is mailed once however many
// control planes look), and the accounts seen at or above the low-balance threshold since their
// last low-balance email (only those are told when they fall below it).

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table email_settings (
      account_id uuid primary key references accounts(id),
      purchase_emails boolean not null default true,
      low_balance_emails boolean not null default true,
      updated_at timestamptz not null default now()
    );
    create table email_notices (
      kind text not null,
      subject_id text not null,
      account_id uuid not null references accounts(id),
      sent_at timestamptz not null default now(),
      primary key (kind, subject_id)
    );
    create table low_balance_armed (
      account_id uuid primary key references accounts(id),
      armed_at timestamptz not null default now()
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table low_balance_armed; drop table email_notices; drop table email_settings`.execute(db);
}
