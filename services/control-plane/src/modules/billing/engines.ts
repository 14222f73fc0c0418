/**
 * The billing engines as the rest of the control plane sees them: the hot tier is opened and typed
 * here, a change of balances goes through changeBalances (or balancesIn, inside a caller's
 * transaction), and a change to a key or an account that the hot tier holds goes through
 * changeBillingEntries. Nothing outside billing reaches into billing/hot/.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { lockAccountRow } from './engine.repository.ts';
import { type ChangedEntries, changeEntries } from './hot/hot-entries.ts';
import type { HotTier } from './hot/hot-tier.ts';

export { type HotTier, openHotTier } from './hot/hot-tier.ts';

/**
 * Runs a change of keys or an account in one transaction that the hot tier sees as it happens
 * (hot-entries.ts): the entries are marked before the commit and rewritten after it; without the
 * hot tier it is a plain transaction.
 */
export function changeBillingEntries<T>(
  deps: { db: Kysely<Database>; clock: { now(): Date }; hot: HotTier | null },
  change: (trx: Transaction<Database>) => Promise<{ result: T; changed: ChangedEntries | null }>,
): Promise<T> {
  return changeEntries(deps.hot?.store ?? null, deps.db, () => deps.clock.now().getTime(), change);
}

/**
 * Changes of account balances inside one transaction (R15, R18): each account is locked, and what
 * its hot-tier lease holds free recalled to Postgres, before anything of it changes. Outside the
 * hot tier, the only way to lock an account: nobody can lock one and forget its lease.
 */
export interface BalanceChange {
  trx: Transaction<Database>;
  /** Locks these accounts, in id order (two changes of the same accounts cannot deadlock). */
  lock(...accountIds: string[]): Promise<void>;
}

/** The balance changes of the caller's transaction (one that also changes other things). */
export function balancesIn(engines: { hot: HotTier | null }, trx: Transaction<Database>): BalanceChange {
  const locked = new Set<string>();
  return {
    trx,
    async lock(...accountIds) {
      for (const id of [...new Set(accountIds)].sort()) {
        if (locked.has(id)) continue;
        await lockAccountRow(trx, id);
        await engines.hot?.recallInTransaction(trx, id);
        locked.add(id);
      }
    },
  };
}

/** Runs a change of balances in a transaction of its own. */
export function changeBalances<T>(
  engines: { db: Kysely<Database>; hot: HotTier | null },
  change: (balances: BalanceChange) => Promise<T>,
): Promise<T> {
  return engines.db.transaction().execute((trx) => change(balancesIn(engines, trx)));
}
