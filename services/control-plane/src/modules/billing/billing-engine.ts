/**
 * The billing engine as the rest of the control plane sees it (docs/decisions/billing-engine.md):
 * one interface, two implementations (Postgres alone: postgres-engine.ts; the hot tier in front of
 * it: hot/hot-engine.ts), chosen once when the dependencies are built (engines.ts). Nothing outside
 * billing asks which one runs.
 */
import type {
  FinishBatchRequest,
  FinishBatchResponse,
  RenewSlotsRequest,
  RenewSlotsResponse,
  ReserveBatchRequest,
  ReserveBatchResponse,
} from '@tollgate/schemas';
import type { Kysely, Transaction } from 'kysely';
import type { Clock } from '../../clock.ts';
import type { PreparedQueries } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import type { SpendCapCache } from '../spend-caps/spend-caps.cache.ts';
import type { CapCounts } from '../spend-caps/spend-caps.counting.ts';
import type { OtherFinish } from '../spend-caps/spend-caps.finish.ts';
import type { ChangedEntries } from './hot/hot-entries.ts';

/** What a lease holds of each source (an entitlement id, or 'c' for credit); empty without one. */
export type LeaseSplit = Map<string, { leased: bigint; free: bigint; inFlight: bigint }>;

/** A change of keys or an account: its result, and the entries the engine must see changed. */
export type EntriesChange<T> = (
  trx: Transaction<Database>,
) => Promise<{ result: T; changed: ChangedEntries | null }>;

export interface BillingEngine {
  /** For logs and reports only; nothing branches on it. */
  readonly kind: 'postgres' | 'hot';
  /** Reserves every item of a batch (R1-R8, R16), spend caps judged first (docs/billing/spend-caps.md). */
  reserve(request: ReserveBatchRequest): Promise<ReserveBatchResponse>;
  /**
   * Records the routes, then settles, releases or holds every item (R9-R14), idempotently and
   * durably, and corrects what the finished calls count against spend caps.
   */
  finish(request: FinishBatchRequest): Promise<FinishBatchResponse>;
  /**
   * Locks one account for a change of its balances inside `trx` (R18), after which what a lease
   * holds free is back in Postgres (R15). Only through balancesIn/changeBalances (engines.ts).
   */
  lockAccount(trx: Transaction<Database>, accountId: string): Promise<void>;
  /** After a balance change that locked the account and then rolled back (refused). */
  resync(accountId: string): Promise<void>;
  /** Runs a change of keys or an account in one transaction the engine sees as it happens. */
  changeEntries<T>(change: EntriesChange<T>): Promise<T>;
  /** How the account's lease splits what Postgres shows as reserved (balance reads). */
  leaseSplit(accountId: string): Promise<LeaseSplit>;
  /**
   * The reconciler's pass over what the engine holds outside Postgres; `released`: accounts whose
   * holds were just released in Postgres. Returns the ids it held (settlement_missing).
   */
  reconcile(released: ReadonlySet<string>): Promise<{ held: string[] }>;
  /**
   * What the account's calls counted against spend caps: the calls since `callsSince` (ms; none
   * when null), the calendar sums of windows ending after `countersSince`.
   */
  capCounts(
    accountId: string,
    since: { callsSince: number | null; countersSince: number },
  ): Promise<CapCounts>;
  /** Corrects what finishes that did not come from the gateway count (capped accounts' only). */
  countOtherFinishes(finishes: readonly OtherFinish[]): Promise<void>;
  /**
   * Renews the concurrency slots of calls a gateway still runs. The hot tier owns those slots
   * (docs/decisions/one-owner-of-the-slot.md); Postgres alone takes none (the gateway does).
   */
  renewSlots(request: RenewSlotsRequest): Promise<RenewSlotsResponse>;
  /** The catalogue changed: drop what the engine caches of it. */
  catalogChanged(): void;
  close(): Promise<void>;
}

/** What either engine is built from. */
export interface EngineParts {
  db: Kysely<Database>;
  prepared: PreparedQueries;
  clock: Clock;
  caps: SpendCapCache;
}

/** The accounts of these calls that have any spend cap. */
export async function cappedAccounts(
  caps: SpendCapCache,
  items: ReadonlyArray<{ accountId: string }>,
): Promise<string[]> {
  const accounts = await caps.get([...new Set(items.map((item) => item.accountId))]);
  return [...accounts].filter(([, account]) => account.caps.length > 0).map(([accountId]) => accountId);
}
