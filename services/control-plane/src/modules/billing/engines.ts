/**
 * The billing engine chosen once, when the dependencies are built (openBillingEngine), and the
 * ways the rest of the control plane changes what it holds: a change of balances goes through
 * changeBalances (or balancesIn, inside a caller's transaction), a change to a key or an account
 * through changeBillingEntries. Nothing outside billing reaches into billing/hot/.
 */
import type { Logger } from '@tollgate/service-kit';
import type { Kysely, Transaction } from 'kysely';
import type { ControlPlaneConfig } from '../../config.ts';
import type { Database } from '../../db/schema.ts';
import type { SpendCapCache } from '../spend-caps/spend-caps.cache.ts';
import type { OtherFinish } from '../spend-caps/spend-caps.finish.ts';
import type { BillingEngine, EngineParts, EntriesChange } from './billing-engine.ts';
import { createHotEngine } from './hot/hot-engine.ts';
import { openHotTier } from './hot/hot-tier.ts';
import { createPostgresEngine } from './postgres-engine.ts';

export type { BillingEngine } from './billing-engine.ts';

/** The hot tier when REDIS_URL is set and HOT_TIER is on; else Postgres alone. */
export function openBillingEngine(
  config: ControlPlaneConfig,
  parts: EngineParts & { logger: Logger },
): BillingEngine {
  const hot = openHotTier(config, parts);
  if (hot) return createHotEngine(hot, parts);
  return createPostgresEngine(parts, {
    keyPepper: config.keyPepper,
    coverPercent: config.billing.overrunCoverPercent,
  });
}

/**
 * Runs a change of keys or an account in one transaction that the engine sees as it happens (the
 * hot tier: hot-entries.ts, entries marked before the commit and rewritten after it).
 */
export function changeBillingEntries<T>(
  deps: { billing: BillingEngine },
  change: EntriesChange<T>,
): Promise<T> {
  return deps.billing.changeEntries(change);
}

/**
 * Changes of account balances inside one transaction (R15, R18): each account is locked, and what
 * its hot-tier lease holds free recalled to Postgres, before anything of it changes. Outside the
 * engines, the only way to lock an account: nobody can lock one and forget its lease.
 */
export interface BalanceChange {
  trx: Transaction<Database>;
  /** Locks these accounts, in id order (two changes of the same accounts cannot deadlock). */
  lock(...accountIds: string[]): Promise<void>;
}

/** The balance changes of the caller's transaction (one that also changes other things). */
export function balancesIn(deps: { billing: BillingEngine }, trx: Transaction<Database>): BalanceChange {
  const locked = new Set<string>();
  return {
    trx,
    async lock(...accountIds) {
      for (const id of [...new Set(accountIds)].sort()) {
        if (locked.has(id)) continue;
        await deps.billing.lockAccount(trx, id);
        locked.add(id);
      }
    },
  };
}

/** Runs a change of balances in a transaction of its own. */
export function changeBalances<T>(
  deps: { db: Kysely<Database>; billing: BillingEngine },
  change: (balances: BalanceChange) => Promise<T>,
): Promise<T> {
  return deps.db.transaction().execute((trx) => change(balancesIn(deps, trx)));
}

/**
 * Corrects what finishes that did not come from the gateway (an admin's resolution, the
 * reconciler's release) count against spend caps, in whichever engine counted the calls: a
 * resolved hold counts its usage (or nothing once released) from then on, as a gateway's settle
 * would. Accounts without a cap are left out.
 */
export async function countOtherFinishes(
  deps: { billing: BillingEngine; caps: SpendCapCache },
  finishes: readonly OtherFinish[],
): Promise<void> {
  const accounts = await deps.caps.get([...new Set(finishes.map((each) => each.accountId))]);
  const capped = finishes.filter((each) => (accounts.get(each.accountId)?.caps.length ?? 0) > 0);
  if (capped.length === 0) return;
  await deps.billing.countOtherFinishes(capped);
}
