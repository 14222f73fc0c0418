import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { type AccountCaps, loadAccountCaps } from './spend-caps.counting.ts';
import { type CapPrices, loadPrices } from './spend-caps.prices.ts';

/**
 * The caps of accounts as the reservation path first sees them: kept for `ttlMs`, dropped at once
 * when this control plane changes them (another one sees the change within ttlMs). It only decides
 * whether a call takes the capped path; that path reads the caps again where it counts.
 */
export interface SpendCapCache {
  get(accountIds: readonly string[]): Promise<Map<string, AccountCaps>>;
  forget(accountId: string): void;
  /** Every alias's prices as caps count them, read at most every ttlMs. */
  prices(): Promise<Map<string, CapPrices | null>>;
}

export function createSpendCapCache(db: Kysely<Database>, now: () => number, ttlMs = 1000): SpendCapCache {
  const entries = new Map<string, { caps: AccountCaps; until: number }>();
  let prices: { map: Promise<Map<string, CapPrices | null>>; until: number } | null = null;
  return {
    prices() {
      const at = now();
      if (!prices || prices.until <= at) {
        const map = loadPrices(db);
        prices = { map, until: at + ttlMs };
        map.catch(() => {
          prices = null;
        });
      }
      return prices.map;
    },
    async get(accountIds) {
      const at = now();
      const result = new Map<string, AccountCaps>();
      const missing: string[] = [];
      for (const accountId of accountIds) {
        const entry = entries.get(accountId);
        if (entry && entry.until > at) result.set(accountId, entry.caps);
        else missing.push(accountId);
      }
      if (missing.length > 0) {
        const loaded = await loadAccountCaps(db, missing);
        if (entries.size > 100_000) entries.clear();
        for (const [accountId, caps] of loaded) {
          entries.set(accountId, { caps, until: at + ttlMs });
          result.set(accountId, caps);
        }
      }
      return result;
    },
    forget(accountId) {
      entries.delete(accountId);
    },
  };
}
