import type { ColumnType } from 'kysely';

/** Operator-set maxima of one account's key ceilings; a null column takes the configured default. */
export interface AccountKeyLimitsTable {
  account_id: string;
  max_request_bytes: number | null;
  max_output_tokens: number | null;
  requests_per_minute: number | null;
  concurrency: number | null;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
