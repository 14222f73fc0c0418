import type { ReserveItem } from '@tollgate/schemas';
import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import {
  addCounted,
  type CapCounts,
  callWindows,
  capsOfKey,
  countsSince,
  loadAccountCaps,
  readCounts,
} from './spend-caps.counting.ts';
import { type CapVerdict, judgeCall } from './spend-caps.enforce.ts';
import { type CapAmounts, estimateAmounts, loadPrices, pricesList } from './spend-caps.prices.ts';
import { ACCOUNT_SUBJECT, insertUsage } from './spend-caps.repository.ts';

export interface BatchJudgement {
  /** Per item: undefined when no cap bounds its key. */
  verdicts: Array<CapVerdict | undefined>;
  /** Counts the items that were reserved (their estimates, at `now`). */
  record(reserved: readonly number[]): Promise<void>;
}

/**
 * The Postgres engine's cap step: inside the reserving transaction, with the accounts already
 * locked, reads each capped account's caps and what they count (the rolling window's calls, the
 * calendar windows' sums of the batch's keys and the account) and judges the batch's calls in
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
  const counts = new Map<string, CapCounts>();
  for (const [accountId, account] of accounts) {
    if (account.caps.length === 0) continue;
    const keyIds = [
      ...new Set(items.filter((item) => item.accountId === accountId).map((item) => item.keyId)),
    ];
    counts.set(
      accountId,
      await readCounts(trx, accountId, countsSince(account.caps, account.timeZone, at), keyIds),
    );
  }
  const amounts: Array<CapAmounts | undefined> = [];
  const verdicts = items.map((item, index) => {
    const account = accounts.get(item.accountId);
    if (!account || capsOfKey(account, item.keyId).length === 0) return undefined;
    const counted = counts.get(item.accountId) ?? { calls: [], counters: [] };
    const amount = estimateAmounts(item.estimate, prices.get(item.alias));
    const verdict = judgeCall(account, item.keyId, amount, counted, at);
    if (verdict.ok) {
      amounts[index] = amount;
      addCounted(counted, { keyId: item.keyId, at, ...amount }, account.timeZone);
    }
    return verdict;
  });
  return {
    verdicts,
    async record(reserved) {
      const counted = reserved.flatMap((index) => {
        const item = items[index] as ReserveItem;
        const amount = amounts[index];
        const account = accounts.get(item.accountId);
        if (!amount || !account) return [];
        return [{ item, amount, windows: callWindows(account.timeZone, at) }];
      });
      await insertUsage(
        trx,
        counted.map(({ item, amount, windows }) => ({
          reservation_id: item.reservationId,
          account_id: item.accountId,
          key_id: item.keyId,
          counted_at: now,
          credits: amount.credits,
          tokens: amount.tokens,
          prices: pricesList(prices.get(item.alias) ?? null),
          windows: windows.map((window) => new Date(window.start)),
        })),
        counted.flatMap(({ item, amount, windows }) =>
          windows.flatMap((window) =>
            [ACCOUNT_SUBJECT, item.keyId].map((subject) => ({
              account_id: item.accountId,
              subject,
              period: window.period,
              window_start: new Date(window.start),
              window_end: new Date(window.end),
              credits: amount.credits,
              tokens: amount.tokens,
            })),
          ),
        ),
      );
    },
  };
}
