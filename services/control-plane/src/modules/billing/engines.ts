/**
 * The billing engines as the rest of the control plane sees them: the hot tier is opened and typed
 * here, and a change to a key or an account that the hot tier holds goes through
 * changeBillingEntries. Nothing outside billing reaches into billing/hot/.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
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
