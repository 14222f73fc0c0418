import type { ColumnType } from 'kysely';

type Created = ColumnType<Date, Date | undefined, never>;
type Updated = ColumnType<Date, Date | undefined, Date>;

export type PaymentStatus = 'pending' | 'succeeded' | 'failed' | 'refunded';

export interface PaymentsTable {
  order_id: string;
  provider: string;
  status: PaymentStatus;
  provider_payment_id: string | null;
  redirect_url: string | null;
  amount: bigint;
  currency: string;
  exponent: number;
  failure_reason: string | null;
  refund_reference: string | null;
  checked_at: Date | null;
  created_at: Created;
  updated_at: Updated;
}

export interface PaymentEventsTable {
  provider: string;
  event_id: string;
  type: string;
  order_id: string | null;
  outcome: string;
  created_at: Created;
}
