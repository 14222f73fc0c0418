import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- Credentials of reseller software, accepted only under /api/v1/reseller-management.
    create table management_keys (
      id uuid primary key default gen_random_uuid(),
      reseller_id uuid not null references accounts(id),
      name text not null,
      -- HMAC-SHA256(pepper, SHA-256(secret)), like inference keys.
      lookup_hash bytea not null unique,
      mask text not null,
      scopes text[] not null,
      expires_at timestamptz,
      last_used_at timestamptz,
      revoked_at timestamptz,
      created_at timestamptz not null default now()
    );
    create index management_keys_reseller_idx on management_keys (reseller_id, created_at desc);

    -- Idempotency of reseller grants: one row per (reseller, Idempotency-Key), the first answer kept.
    create table reseller_grants (
      id uuid primary key default gen_random_uuid(),
      reseller_id uuid not null references accounts(id),
      customer_id uuid not null references accounts(id),
      idempotency_key text,
      request_hash text not null,
      result jsonb,
      created_at timestamptz not null default now()
    );
    create unique index reseller_grants_idempotency_idx on reseller_grants (reseller_id, idempotency_key)
      where idempotency_key is not null;

    -- Append-only: every admin, reseller and management-key action.
    create table audit_log (
      id bigserial primary key,
      actor_account_id uuid,
      actor_management_key_id uuid,
      action text not null,
      target_type text,
      target_id text,
      detail jsonb not null default '{}',
      ip text,
      user_agent text,
      created_at timestamptz not null default now()
    );
    create index audit_log_created_idx on audit_log (id desc);
    create index audit_log_actor_idx on audit_log (actor_account_id, id desc);
    create index audit_log_target_idx on audit_log (target_id, id desc);

    create function tollgate_audit_append_only() returns trigger language plpgsql as $fn$
    begin
      raise exception 'audit_log is append-only';
    end $fn$;
    create trigger audit_log_append_only before update or delete on audit_log
      for each row execute function tollgate_audit_append_only();
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table audit_log, reseller_grants, management_keys;
    drop function tollgate_audit_append_only();
  `.execute(db);
}
