import type { ColumnType, Generated } from 'kysely';

type Created = ColumnType<Date, Date | undefined, never>;
type Updated = ColumnType<Date, Date | undefined, Date>;

export type PromotionKind = 'percent_off' | 'amount_off' | 'bonus_tokens' | 'bonus_credit';

export interface PromotionsTable {
  id: Generated<string>;
  code: string;
  kind: PromotionKind;
  percent_off: number | null;
  amount_off: bigint | null;
  currency: string | null;
  exponent: number | null;
  bonus: bigint | null;
  starts_at: Date | null;
  ends_at: Date | null;
  package_ids: string[] | null;
  total_limit: number | null;
  per_account_limit: number | null;
  min_amount: bigint | null;
  held: Generated<number>;
  active: Generated<boolean>;
  created_at: Created;
  updated_at: Updated;
}

export type RedemptionStatus = 'held' | 'consumed' | 'returned';

export interface PromotionRedemptionsTable {
  order_id: string;
  promotion_id: string;
  account_id: string;
  status: RedemptionStatus;
  created_at: Created;
  updated_at: Updated;
}
