import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// A reseller no longer creates or claims an account by naming its address: it sends an
// invitation, and the link (accounts.reseller_id) is made only when the mailbox owner accepts it
// with the emailed token. The customer sees the link in its account and can end it.
//
// Existing links are kept as they are: resellers run customers through them (keys their software
// made, credit they granted), and cutting them would stop those customers' calls. Each now shows
// in its customer's account, who can end it at once; ending it also revokes the keys the reseller
// made for the account, whose secrets the reseller holds.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table reseller_invitations (
      id uuid primary key default gen_random_uuid(),
      reseller_id uuid not null references accounts(id),
      email text not null,
      display_name text,
      token_hash bytea not null unique,
      status text not null default 'pending'
        check (status in ('pending', 'accepted', 'replaced')),
      account_id uuid references accounts(id),
      expires_at timestamptz not null,
      accepted_at timestamptz,
      created_at timestamptz not null default now()
    );
    create index reseller_invitations_reseller_idx on reseller_invitations (reseller_id, created_at desc);
    create index reseller_invitations_pending_idx on reseller_invitations (lower(email))
      where status = 'pending';
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table reseller_invitations`.execute(db);
}
