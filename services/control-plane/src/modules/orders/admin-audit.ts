import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';

/** Who acted: an admin's session, as the key-reveal audit records it. */
export interface AdminCaller {
  accountId: string;
  sessionId: string;
  ip: string;
  userAgent: string | null;
}

/**
 * One audit row per admin action of the commerce area, in the key-reveal audit table (migration
 * 0005 added target and details to it). Written in the action's own transaction when it has one.
 */
export async function writeAdminAudit(
  db: Kysely<Database> | Transaction<Database>,
  caller: AdminCaller,
  action: string,
  target: { type: 'order' | 'promotion'; id: string },
  details: Record<string, unknown> = {},
): Promise<void> {
  await sql`
    insert into key_reveal_audit (key_id, account_id, session_id, outcome, ip, user_agent, target_type, target_id, details)
    values (null, ${caller.accountId}::uuid, ${caller.sessionId}::uuid, ${action}, ${caller.ip}, ${caller.userAgent},
            ${target.type}, ${target.id}, ${JSON.stringify(details)}::jsonb)
  `.execute(db);
}
