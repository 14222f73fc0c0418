import { AppError } from '@tollgate/errors';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { isUuid } from '../accounts/accounts.service.ts';
import { type AuditFilter, insertAuditRow, selectAuditRows } from './audit.repository.ts';

/** Who acts: a signed-in account, or reseller software through one of its management keys. */
export interface Actor {
  accountId: string;
  managementKeyId?: string | null;
  ip: string | null;
  userAgent: string | null;
}

export interface AuditEntry {
  action: string;
  targetType?: string;
  targetId?: string;
  detail?: Record<string, unknown>;
}

/**
 * Appends one row to the audit log (the one table of audit rows, this module's), inside the
 * transaction that makes the change: the change and its row commit together or not at all. Only a
 * transaction is accepted, so a row written after (or without) its change does not compile.
 */
export async function recordAudit(
  trx: Transaction<Database>,
  actor: Actor,
  entry: AuditEntry,
): Promise<void> {
  await insertAuditRow(trx, {
    actor_account_id: actor.accountId,
    actor_management_key_id: actor.managementKeyId ?? null,
    action: entry.action,
    target_type: entry.targetType ?? null,
    target_id: entry.targetId ?? null,
    detail: entry.detail ?? {},
    ip: actor.ip,
    user_agent: actor.userAgent,
  });
}

/** Appends one row the service writes on its own, with no actor (a provider's word, such as a dispute). */
export async function recordServiceAudit(trx: Transaction<Database>, entry: AuditEntry): Promise<void> {
  await insertAuditRow(trx, {
    actor_account_id: null,
    actor_management_key_id: null,
    action: entry.action,
    target_type: entry.targetType ?? null,
    target_id: entry.targetId ?? null,
    detail: entry.detail ?? {},
    ip: null,
    user_agent: null,
  });
}

export interface AuditQuery {
  actorAccountId?: string;
  email?: string;
  targetId?: string;
  action?: string;
  since?: string;
  until?: string;
  cursor?: string;
  limit: number;
}

export interface AuditEvent {
  id: string;
  action: string;
  actor: {
    accountId: string | null;
    managementKeyId: string | null;
    /** The acting account's email; null for the service itself. */
    email: string | null;
    managementKeyName: string | null;
  };
  /** email: the target account's, when the target is an account. */
  target: { type: string | null; id: string | null; email: string | null };
  detail: Record<string, unknown>;
  ip: string | null;
  userAgent: string | null;
  createdAt: string;
}

// Microseconds, not a JS Date: rows written within one millisecond must not be skipped.
function encodeCursor(id: string, micros: string): string {
  return Buffer.from(`${micros}|${id}`).toString('base64url');
}

function decodeCursor(cursor: string): AuditFilter['before'] {
  const [micros, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!/^\d{1,18}$/.test(id ?? '') || !/^\d{1,18}$/.test(micros ?? ''))
    throw AppError.validation({ cursor: ['Use nextCursor of the previous page.'] });
  return { id: BigInt(id as string), micros: BigInt(micros as string) };
}

/** Admin: the audit trail, newest first, filtered, cursor-paged. */
export async function listAudit(
  db: Kysely<Database>,
  query: AuditQuery,
): Promise<{ items: AuditEvent[]; nextCursor: string | null }> {
  if (query.actorAccountId && !isUuid(query.actorAccountId)) return { items: [], nextCursor: null };
  const rows = await selectAuditRows(db, {
    limit: query.limit + 1,
    ...(query.actorAccountId ? { actorAccountId: query.actorAccountId } : {}),
    ...(query.email ? { email: query.email } : {}),
    ...(query.targetId ? { targetId: query.targetId } : {}),
    ...(query.action ? { action: query.action } : {}),
    ...(query.since ? { since: new Date(query.since) } : {}),
    ...(query.until ? { until: new Date(query.until) } : {}),
    ...(query.cursor ? { before: decodeCursor(query.cursor) } : {}),
  });
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return {
    items: page.map((row) => ({
      id: row.id,
      action: row.action,
      actor: {
        accountId: row.actor_account_id,
        managementKeyId: row.actor_management_key_id,
        email: row.actor_email,
        managementKeyName: row.actor_management_key_name,
      },
      target: { type: row.target_type, id: row.target_id, email: row.target_email },
      detail: row.detail,
      ip: row.ip,
      userAgent: row.user_agent,
      createdAt: row.created_at.toISOString(),
    })),
    nextCursor: rows.length > query.limit && last ? encodeCursor(last.id, last.micros) : null,
  };
}
