import type { ColumnType, Generated } from 'kysely';

/** An account's automatic top-up (docs/payments.md#auto-top-up). */
export interface AutoTopUpsTable {
  account_id: string;
  enabled: Generated<boolean>;
  /** Credits: a settlement that leaves the account holding less charges one top-up. */
  threshold: bigint;
  /** Minor units of the catalogue currency charged each time. */
  amount: bigint;
  currency: string;
  exponent: number;
  /** True until a crossing charges a top-up; set again when the balance is back at the threshold. */
  armed: Generated<boolean>;
  /** Counts armed states: the idempotency of one crossing is (account, generation). */
  generation: Generated<bigint>;
  stripe_customer: string | null;
  payment_method: string | null;
  last_failure: ColumnType<string | null, string | null | undefined, string | null>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
