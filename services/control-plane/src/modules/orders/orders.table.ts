import type { ColumnType, Generated } from 'kysely';

type Created = ColumnType<Date, Date | undefined, never>;
type Updated = ColumnType<Date, Date | undefined, Date>;

export type OrderStatus = 'pending' | 'paid' | 'expired' | 'cancelled' | 'failed' | 'refunded';

export interface OrdersTable {
  id: string;
  account_id: string;
  package_id: string;
  status: OrderStatus;
  provider: string;
  list_amount: bigint;
  discount_amount: bigint;
  amount: bigint;
  currency: string;
  exponent: number;
  tokens: bigint;
  bonus_tokens: Generated<bigint>;
  bonus_credits: Generated<bigint>;
  promotion_id: string | null;
  promotion_code: string | null;
  /** Shown to the customer; the manual provider's payment reference. */
  reference: string;
  entitlement_id: string | null;
  expires_at: Date;
  paid_at: Date | null;
  closed_at: Date | null;
  refunded_tokens: bigint | null;
  refunded_credits: bigint | null;
  created_at: Created;
  updated_at: Updated;
}
