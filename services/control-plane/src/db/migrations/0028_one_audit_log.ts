import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// One audit table: the key reveals (and the commerce admin actions written beside them before
// they moved) join audit_log, which the audit module owns, and key_reveal_audit goes.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    insert into audit_log (actor_account_id, actor_management_key_id, action, target_type, target_id, detail, ip,
                           user_agent, created_at)
    select account_id, null,
           case when key_id is null and target_type is not null then outcome else 'api_key.reveal' end,
           case when key_id is null and target_type is not null then target_type else 'api_key' end,
           coalesce(key_id::text, target_id),
           case when key_id is null and target_type is not null
                then coalesce(details, '{}'::jsonb) || jsonb_build_object('sessionId', session_id)
                else jsonb_build_object('outcome', outcome, 'sessionId', session_id) end,
           ip, user_agent, created_at
    from key_reveal_audit
    order by created_at, id;
    drop table key_reveal_audit;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table key_reveal_audit (
      id bigserial primary key,
      key_id uuid,
      account_id uuid not null,
      session_id uuid,
      outcome text not null,
      ip text,
      user_agent text,
      created_at timestamptz not null default now(),
      target_type text,
      target_id text,
      details jsonb
    );
    create index key_reveal_audit_account_idx on key_reveal_audit (account_id, created_at);
  `.execute(db);
}
