import type { ColumnType, Generated } from 'kysely';

type Created = ColumnType<Date, Date | undefined, never>;
type Updated = ColumnType<Date, Date | undefined, Date>;

export type OrderStatus = 'pending' | 'paid' | 'expired' | 'cancelled' | 'failed' | 'refunded';

export type OrderKind = 'package' | 'top_up';

export interface OrdersTable {
  id: string;
  account_id: string;
  /** The package bought; null for a top-up (kind top_up), which buys credits. */
  package_id: string | null;
  kind: ColumnType<OrderKind, OrderKind | undefined, never>;
  /** Credits a top-up grants (0 for a package). */
  credits: Generated<bigint>;
  /** A Stripe top-up whose card is kept for automatic top-ups. */
  save_payment_method: Generated<boolean>;
  /** The armed state of auto top-up this order was charged for (docs/payments.md#auto-top-up). */
  auto_top_up_generation: bigint | null;
  /** The Idempotency-Key a top-up was created with: the same key answers the same order. */
  idempotency_key: ColumnType<string | null, string | null | undefined, never>;
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
