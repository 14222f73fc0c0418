import type { ColumnType, Generated } from 'kysely';

/** Append-only (a trigger refuses update and delete): who did what to which record, from where. */
export interface AuditLogTable {
  id: Generated<bigint>;
  actor_account_id: string | null;
  actor_management_key_id: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  detail: ColumnType<Record<string, unknown>, string | undefined, never>;
  ip: string | null;
  user_agent: string | null;
  created_at: ColumnType<Date, never, never>;
}
