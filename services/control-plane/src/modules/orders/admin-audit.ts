import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { recordAudit } from '../audit/audit.service.ts';

/** Who acted: an admin's session. */
export interface AdminCaller {
  accountId: string;
  sessionId: string;
  ip: string;
  userAgent: string | null;
}

/**
 * One audit row per admin action of the commerce area (order.refund, promotion.create, ...), in the
 * audit log under its own action name, in the action's own transaction.
 */
export async function writeAdminAudit(
  trx: Transaction<Database>,
  caller: AdminCaller,
  action: string,
  target: { type: 'order' | 'promotion'; id: string },
  details: Record<string, unknown> = {},
): Promise<void> {
  await recordAudit(
    trx,
    { accountId: caller.accountId, ip: caller.ip, userAgent: caller.userAgent },
    {
      action,
      targetType: target.type,
      targetId: target.id,
      detail: { ...details, sessionId: caller.sessionId },
    },
  );
}
