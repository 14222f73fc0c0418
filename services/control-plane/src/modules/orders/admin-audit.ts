import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { insertAuditRow } from '../audit/audit.repository.ts';

/** Who acted: an admin's session. */
export interface AdminCaller {
  accountId: string;
  sessionId: string;
  ip: string;
  userAgent: string | null;
}

/**
 * One audit row per admin action of the commerce area (order.refund, promotion.create, ...), in the
 * audit log under its own action name. Written in the action's own transaction when it has one.
 */
export async function writeAdminAudit(
  db: Kysely<Database> | Transaction<Database>,
  caller: AdminCaller,
  action: string,
  target: { type: 'order' | 'promotion'; id: string },
  details: Record<string, unknown> = {},
): Promise<void> {
  await insertAuditRow(db, {
    actor_account_id: caller.accountId,
    actor_management_key_id: null,
    action,
    target_type: target.type,
    target_id: target.id,
    detail: { ...details, sessionId: caller.sessionId },
    ip: caller.ip,
    user_agent: caller.userAgent,
  });
}
