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
  /** The starts of the day, week and month it counts in (migration 0030); null: counted before. */
  windows: Date[] | null;
}

/**
 * The running sum of one subject in one calendar window (migration 0030): what the calls reserved
 * in it count, in flight at their estimate, corrected at their settlement.
 */
export interface SpendCapCountersTable {
  account_id: string;
  /** A key's id, or 00000000-0000-0000-0000-000000000000 for every key of the account together. */
  subject: string;
  period: 'day' | 'week' | 'month';
  window_start: Date;
  window_end: Date;
  credits: bigint;
  tokens: bigint;
}
