import type { ColumnType, Generated } from 'kysely';

export interface AccountsTable {
  id: Generated<string>;
  email: string;
  password_hash: string;
  display_name: string | null;
  is_admin: Generated<boolean>;
  is_reseller: Generated<boolean>;
  reseller_id: string | null;
  status: Generated<'active' | 'suspended'>;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
  /** Set by a trigger whenever the status changes (migration 0012). */
  state_version: ColumnType<bigint, never, never>;
}
