import { type Kysely, sql, type Transaction } from 'kysely';
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

/** Only inside the transaction of the change it records (audit.service.ts). */
export async function insertAuditRow(
  trx: Transaction<Database>,
  values: Omit<AuditLogTable, 'id' | 'created_at' | 'detail'> & { detail: Record<string, unknown> },
): Promise<void> {
  await trx
    .insertInto('audit_log')
    .values({
      ...values,
      // A lone surrogate is written to jsonb as an escape Postgres refuses; text columns get U+FFFD
      // for it from the driver, and so does the detail here.
      detail: JSON.stringify(values.detail, (_key, value) =>
        typeof value === 'bigint' ? String(value) : typeof value === 'string' ? value.toWellFormed() : value,
      ),
    })
    .execute();
}

export type AuditReadRow = AuditRow & {
  micros: string;
  actor_email: string | null;
  actor_management_key_name: string | null;
  target_email: string | null;
};

export interface AuditFilter {
  actorAccountId?: string;
  /** Part of the actor's or the target account's email, any letter case. */
  email?: string;
  targetId?: string;
  action?: string;
  since?: Date;
  until?: Date;
  /** Rows older than this position. */
  before?: { id: bigint; micros: bigint };
  limit: number;
}

/** Newest first, ordered by (created_at in microseconds, id) so a cursor resumes exactly. */
export async function selectAuditRows(
  db: Kysely<Database>,
  filter: AuditFilter,
): Promise<Array<AuditReadRow>> {
  const before = filter.before ?? null;
  const email = filter.email ? `%${filter.email.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  const result = await sql<AuditReadRow>`
    select timed.id::text as id, actor_account_id, actor_management_key_id, action, target_type, target_id,
           detail, ip, user_agent, timed.created_at, micros::text as micros,
           actor.email as actor_email, management_key.name as actor_management_key_name,
           target_account.email as target_email
    from (select *, (extract(epoch from created_at) * 1000000)::bigint as micros from audit_log) as timed
    left join accounts actor on actor.id = timed.actor_account_id
    left join management_keys management_key on management_key.id = timed.actor_management_key_id
    left join accounts target_account
      on target_type = 'account' and target_account.id::text = timed.target_id
    where (${filter.actorAccountId ?? null}::uuid is null or actor_account_id = ${filter.actorAccountId ?? null}::uuid)
      and (${email}::text is null or actor.email ilike ${email}::text or target_account.email ilike ${email}::text)
      and (${filter.targetId ?? null}::text is null or target_id = ${filter.targetId ?? null}::text)
      and (${filter.action ?? null}::text is null or action = ${filter.action ?? null}::text)
      and (${filter.since ?? null}::timestamptz is null or timed.created_at >= ${filter.since ?? null}::timestamptz)
      and (${filter.until ?? null}::timestamptz is null or timed.created_at < ${filter.until ?? null}::timestamptz)
      and (${before?.micros ?? null}::bigint is null
           or (micros, timed.id) < (${before?.micros ?? null}::bigint, ${before?.id ?? null}::bigint))
    order by micros desc, timed.id desc
    limit ${filter.limit}
  `.execute(db);
  return result.rows;
}
