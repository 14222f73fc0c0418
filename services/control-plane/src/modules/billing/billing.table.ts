import type { ColumnType, Generated } from 'kysely';

type Created = ColumnType<Date, Date | undefined, never>;

export interface EntitlementsTable {
  id: Generated<string>;
  account_id: string;
  package_id: string | null;
  aliases: string[] | null;
  granted: bigint;
  remaining: bigint;
  reserved: Generated<bigint>;
  expires_at: Date | null;
  max_output_tokens: number | null;
  requests_per_minute: number | null;
  concurrency: number | null;
  cause: string;
  idempotency_key: string | null;
  /** Counts weighted units (R2b, migration 0029) instead of raw tokens. */
  weighted: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: Created;
}

export interface CreditBalancesTable {
  account_id: string;
  available: Generated<bigint>;
  reserved: Generated<bigint>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

/** A credit grant's Idempotency-Key, claimed with the grant (migration 0014). */
export interface CreditGrantKeysTable {
  idempotency_key: string;
  account_id: string;
  amount: bigint;
  created_at: Created;
}

export interface ReservationLeg {
  source: 'entitlement' | 'credit';
  entitlementId?: string;
  /** Units of the entitlement (tokens, or weighted units: R2b) or credits for the credit leg (integer string). */
  amount: string;
  /** A weighted entitlement's units per token, fixed when reserved (R2b); absent: 1. */
  rate?: string;
}

export type ReservationStatus = 'reserved' | 'settled' | 'released' | 'held';

export interface ReservationsTable {
  id: string;
  account_id: string;
  key_id: string;
  alias: string;
  surface: string;
  status: ReservationStatus;
  estimate_input: Generated<bigint>;
  estimate_output: Generated<bigint>;
  legs: ColumnType<ReservationLeg[], string, string>;
  reserved_tokens: Generated<bigint>;
  reserved_credits: Generated<bigint>;
  /** Input outside any cache (since migration 0018; before it, every input token). */
  input_tokens: bigint | null;
  output_tokens: bigint | null;
  cache_read_tokens: bigint | null;
  cache_write_tokens: bigint | null;
  cache_write_1h_tokens: bigint | null;
  charged_tokens: Generated<bigint>;
  charged_credits: Generated<bigint>;
  written_off_tokens: Generated<bigint>;
  written_off_credits: Generated<bigint>;
  outcome: string | null;
  http_status: number | null;
  created_at: Created;
  finished_at: Date | null;
  hold_reason: string | null;
}

export type LedgerKind = 'grant' | 'reserve' | 'settle' | 'release' | 'hold' | 'write_off' | 'adjustment';

export interface LedgerEntriesTable {
  id: Generated<bigint>;
  account_id: string;
  entitlement_id: string | null;
  kind: LedgerKind;
  available_delta: Generated<bigint>;
  reserved_delta: Generated<bigint>;
  amount: Generated<bigint>;
  reservation_id: string | null;
  /** The hot-tier lease a row moved money into, out of, or charged (migration 0012). */
  lease_id: Generated<string | null>;
  cause: string;
  created_at: Created;
}

/** A lease of an account's balances to the hot tier (migration 0012). */
export interface HotLeasesTable {
  id: string;
  account_id: string;
  version: bigint;
  opened_at: Created;
  closed_at: Date | null;
  close_reason: string | null;
}

/** What a lease moved of one source (entitlement_id null: credit), and where it went. */
export interface HotLeasePartsTable {
  lease_id: string;
  entitlement_id: string | null;
  leased: bigint;
  returned: bigint;
  spent: bigint;
  held: bigint;
}

/** Which upstream served a call and after how many attempts (admins only; migration 0016). */
export interface ReservationRoutesTable {
  reservation_id: string;
  provider_id: string;
  upstream_model: string;
  attempts: number;
  created_at: Created;
}
