import type { ColumnType, Generated } from 'kysely';

/** An account's choice of timezone for calendar cap windows (migration 0018); UTC without a row. */
export interface SpendCapAccountsTable {
  account_id: string;
  time_zone: string;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface SpendCapsTable {
  id: Generated<string>;
  account_id: string;
  /** Null: the cap bounds every key of the account together. */
  key_id: string | null;
  set_by: 'customer' | 'reseller' | 'admin';
  unit: 'credits' | 'tokens';
  period: '5h' | 'day' | 'week' | 'month';
  amount: bigint;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

/** What one call of an account with caps counts: its estimate while in flight, then its usage. */
export interface SpendCapUsageTable {
  reservation_id: string;
  account_id: string;
  key_id: string;
  counted_at: Date;
  credits: bigint;
  tokens: bigint;
  /** input, output, cache read, cache write, 1-hour cache write, per call; null: unpriced. */
  prices: bigint[] | null;
  state: Generated<'reserved' | 'settled' | 'released' | 'held'>;
}
