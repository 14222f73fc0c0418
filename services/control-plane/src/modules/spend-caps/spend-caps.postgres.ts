import type { ReserveItem } from '@tollgate/schemas';
import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import {
  type CapCall,
  capsOfKey,
  earliestStart,
  loadAccountCaps,
  readCountedCalls,
} from './spend-caps.counting.ts';
import { type CapVerdict, judgeCall } from './spend-caps.enforce.ts';
import { type CapAmounts, estimateAmounts, loadPrices, pricesList } from './spend-caps.prices.ts';
import { insertUsage } from './spend-caps.repository.ts';

export interface BatchJudgement {
  /** Per item: undefined when no cap bounds its key. */
  verdicts: Array<CapVerdict | undefined>;
  /** Counts the items that were reserved (their estimates, at `now`). */
  record(reserved: readonly number[]): Promise<void>;
}

/**
 * The Postgres engine's cap step: inside the reserving transaction, with the accounts already
 * locked, reads each capped account's caps and counted calls and judges the batch's calls in
 * order, each admitted one counting before the next is judged.
 */
export async function judgeBatchInTransaction(
  trx: Transaction<Database>,
  items: readonly ReserveItem[],
  accountIds: readonly string[],
  now: Date,
): Promise<BatchJudgement> {
  const at = now.getTime();
  const accounts = await loadAccountCaps(trx, accountIds);
  const prices = await loadPrices(trx, [...new Set(items.map((item) => item.alias))]);
  const calls = new Map<string, CapCall[]>();
  for (const [accountId, account] of accounts) {
    if (account.caps.length === 0) continue;
    calls.set(
      accountId,
      await readCountedCalls(trx, accountId, earliestStart(account.caps, account.timeZone, at)),
    );
  }
  const amounts: Array<CapAmounts | undefined> = [];
  const verdicts = items.map((item, index) => {
    const account = accounts.get(item.accountId);
    if (!account || capsOfKey(account, item.keyId).length === 0) return undefined;
    const counted = calls.get(item.accountId) ?? [];
    const amount = estimateAmounts(item.estimate, prices.get(item.alias));
    const verdict = judgeCall(account, item.keyId, amount, counted, at);
    if (verdict.ok) {
      amounts[index] = amount;
      counted.push({ keyId: item.keyId, at, ...amount });
    }
    return verdict;
  });
  return {
    verdicts,
    async record(reserved) {
      await insertUsage(
        trx,
        reserved.flatMap((index) => {
          const item = items[index] as ReserveItem;
          const amount = amounts[index];
          if (!amount) return [];
          const price = prices.get(item.alias);
          return [
            {
              reservation_id: item.reservationId,
              account_id: item.accountId,
              key_id: item.keyId,
              counted_at: now,
              credits: amount.credits,
              tokens: amount.tokens,
              prices: pricesList(price ?? null),
            },
          ];
        }),
      );
    },
  };
}
