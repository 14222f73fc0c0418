import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { AuditLogTable } from './audit.table.ts';

export interface AuditRow {
  id: string;
  actor_account_id: string | null;
  actor_management_key_id: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  detail: Record<string, unknown>;
  ip: string | null;
  user_agent: string | null;
  created_at: Date;
}

export async function insertAuditRow(
  db: Kysely<Database>,
  values: Omit<AuditLogTable, 'id' | 'created_at' | 'detail'> & { detail: Record<string, unknown> },
): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({ ...values, detail: JSON.stringify(values.detail) })
    .execute();
}

export interface AuditFilter {
  actorAccountId?: string;
  targetId?: string;
  action?: string;
  since?: Date;
  until?: Date;
  /** Rows older than this position (`a<id>` of audit_log, `r<id>` of key reveals). */
  before?: { source: 'a' | 'r'; id: bigint; micros: bigint };
  limit: number;
}

/**
 * Newest first over the audit log and the key-reveal audit (kept by the api-keys module), one
 * stream ordered by (created_at in microseconds, source, id) so a cursor resumes exactly.
 */
export async function selectAuditRows(
  db: Kysely<Database>,
  filter: AuditFilter,
): Promise<Array<AuditRow & { source: 'a' | 'r'; micros: string }>> {
  const before = filter.before ?? null;
  const result = await sql<AuditRow & { source: 'a' | 'r'; micros: string }>`
    with events as (
      select 'a' as source, id, actor_account_id, actor_management_key_id, action, target_type, target_id,
             detail, ip, user_agent, created_at
      from audit_log
      union all
      select 'r', id, account_id, null, 'api_key.reveal', 'api_key', key_id::text,
             jsonb_build_object('outcome', outcome, 'sessionId', session_id), ip, user_agent, created_at
      from key_reveal_audit
    )
    select source, id::text as id, actor_account_id, actor_management_key_id, action, target_type, target_id,
           detail, ip, user_agent, created_at, micros::text as micros
    from (select *, (extract(epoch from created_at) * 1000000)::bigint as micros from events) as timed
    where (${filter.actorAccountId ?? null}::uuid is null or actor_account_id = ${filter.actorAccountId ?? null}::uuid)
      and (${filter.targetId ?? null}::text is null or target_id = ${filter.targetId ?? null}::text)
      and (${filter.action ?? null}::text is null or action = ${filter.action ?? null}::text)
      and (${filter.since ?? null}::timestamptz is null or created_at >= ${filter.since ?? null}::timestamptz)
      and (${filter.until ?? null}::timestamptz is null or created_at < ${filter.until ?? null}::timestamptz)
      and (${before?.micros ?? null}::bigint is null
           or (micros, source, id) < (${before?.micros ?? null}::bigint, ${before?.source ?? null}::text, ${before?.id ?? null}::bigint))
    order by micros desc, source desc, id desc
    limit ${filter.limit}
  `.execute(db);
  return result.rows;
}
