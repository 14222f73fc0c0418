import type { ColumnType } from 'kysely';

/** A customer's billing-email opt-outs; no row: every billing email on. */
export interface EmailSettingsTable {
  account_id: string;
  purchase_emails: boolean;
  low_balance_emails: boolean;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

/** One row per notice sent: (kind, subject) is mailed once. */
export interface EmailNoticesTable {
  kind: 'purchase' | 'low_balance';
  subject_id: string;
  account_id: string;
  sent_at: ColumnType<Date, Date | undefined, never>;
}

/** Accounts seen at or above the low-balance threshold since their last low-balance email. */
export interface LowBalanceArmedTable {
  account_id: string;
  armed_at: ColumnType<Date, Date | undefined, never>;
}
