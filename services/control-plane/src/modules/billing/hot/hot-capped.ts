import {
  type FinishItem,
  type FinishResult,
  type ReserveBatchRequest,
  type ReserveBatchResponse,
  type ReserveItem,
  type ReserveResult,
  usageParts,
} from '@tollgate/schemas';
import type { Clock } from '../../../clock.ts';
import type { SpendCapCache } from '../../spend-caps/spend-caps.cache.ts';
import { callWindows, capsOfKey, countsSince } from '../../spend-caps/spend-caps.counting.ts';
import { capMessage } from '../../spend-caps/spend-caps.enforce.ts';
import { capRefusal, type OtherFinish } from '../../spend-caps/spend-caps.finish.ts';
import { estimateAmounts, pricesList } from '../../spend-caps/spend-caps.prices.ts';
import { capWindow, retryAfterSeconds } from '../../spend-caps/windows.ts';
import type { HotTier } from './hot-tier.ts';

/** How long calendar sums are kept after their window ends: no current window reaches further back. */
const MONTH_AND_MORE_MS = 32 * 86_400_000;

type HotDeps = { caps: SpendCapCache; clock: Clock; hot: HotTier };

/**
 * The hot tier's cap step: the calls of capped accounts are judged and counted in Redis, one
 * script per account, before the reservation; a call the reservation then refuses is uncounted.
 * The windows are computed here, from the control plane's clock and the account's timezone.
 */
export async function reserveCappedHot(
  deps: HotDeps,
  request: ReserveBatchRequest,
  capped: readonly string[],
): Promise<ReserveBatchResponse> {
  const accounts = await deps.caps.get(capped);
  const prices = await deps.caps.prices();
  const now = deps.clock.now().getTime();
  const results: ReserveResult[] = new Array(request.items.length);
  const counted = new Map<string, number[]>();
  const byAccount = new Map<string, number[]>();
  request.items.forEach((item, index) => {
    const account = accounts.get(item.accountId);
    if (account && capsOfKey(account, item.keyId).length > 0) {
      byAccount.set(item.accountId, [...(byAccount.get(item.accountId) ?? []), index]);
    }
  });
  await Promise.all(
    [...byAccount].map(async ([accountId, indexes]) => {
      const account = accounts.get(accountId);
      if (!account) return;
      const windows = callWindows(account.timeZone, now);
      const clock = {
        now,
        // A rolling cap's window starts here too (capWindow), so its sums are the window's.
        rollingSince: capWindow('5h', account.timeZone, now).start,
        countersSince: countsSince(account.caps, account.timeZone, now).countersSince,
        pruneBefore: now - MONTH_AND_MORE_MS,
        expireAt: Math.max(...windows.map((window) => window.end)) + MONTH_AND_MORE_MS,
        windows,
      };
      const calls = indexes.map((index) => {
        const item = request.items[index] as ReserveItem;
        const price = prices.get(item.alias);
        const caps = capsOfKey(account, item.keyId);
        return {
          caps,
          call: {
            id: item.reservationId,
            keyId: item.keyId,
            ...estimateAmounts(item.estimate, price),
            prices: pricesList(price ?? null),
            caps: caps.map((cap) => {
              const window = capWindow(cap.period, account.timeZone, now);
              return {
                keyId: cap.keyId,
                unit: cap.unit,
                period: cap.period,
                start: window.start,
                end: window.end,
                limit: cap.limit,
              };
            }),
          },
        };
      });
      const verdicts = await deps.hot.caps.judge(
        accountId,
        clock,
        calls.map((each) => each.call),
      );
      const admitted: number[] = [];
      verdicts.forEach((verdict, position) => {
        const index = indexes[position] as number;
        if (verdict.ok) {
          admitted.push(index);
          return;
        }
        const cap = calls[position]?.caps[verdict.capIndex];
        if (!cap) return;
        results[index] = capRefusal(request.items[index] as ReserveItem, {
          ok: false,
          cap,
          message: capMessage(cap, account.timeZone, verdict.used, verdict.freeAt),
          ...(verdict.freeAt === null ? {} : { retryAfterSeconds: retryAfterSeconds(verdict.freeAt, now) }),
        });
      });
      counted.set(accountId, admitted);
    }),
  );
  const rest = request.items.flatMap((item, index) => (results[index] ? [] : [{ item, index }]));
  if (rest.length > 0) {
    const reserved = await deps.hot.reserve({ ...request, items: rest.map((each) => each.item) });
    reserved.results.forEach((result, position) => {
      results[(rest[position] as { index: number }).index] = result;
    });
  }
  // Refused by the reservation itself (balance, limits, key): it counts nothing.
  await Promise.all(
    [...counted].map(([accountId, indexes]) =>
      deps.hot.caps.uncount(
        accountId,
        indexes
          .filter((index) => !results[index]?.ok)
          .map((index) => (request.items[index] as ReserveItem).reservationId),
      ),
    ),
  );
  return { results };
}

/** The hot tier's settlement correction (see countFinished): in Redis, per capped account. */
export async function countFinishedHot(
  deps: HotDeps,
  items: readonly FinishItem[],
  results: readonly FinishResult[],
  capped: readonly string[],
): Promise<void> {
  await Promise.all(
    capped.map((accountId) =>
      deps.hot.caps.finish(
        accountId,
        items.flatMap((item, index) => {
          const result = results[index];
          if (item.accountId !== accountId || !result) return [];
          const parts = item.action === 'settle' ? usageParts(item.usage) : null;
          return [
            {
              id: item.reservationId,
              status: result.status,
              parts: parts
                ? [parts.input, parts.output, parts.cacheRead, parts.cacheWrite, parts.cacheWrite1h]
                : [0n, 0n, 0n, 0n, 0n],
            },
          ];
        }),
      ),
    ),
  );
}

/** The hot tier's part of countOtherFinishes (billing/engines.ts): in Redis, per account. */
export async function countOtherFinishesHot(hot: HotTier, capped: readonly OtherFinish[]): Promise<void> {
  const zero = [0n, 0n, 0n, 0n, 0n];
  await Promise.all(
    [...new Set(capped.map((each) => each.accountId))].map((accountId) =>
      hot.caps.finish(
        accountId,
        capped
          .filter((each) => each.accountId === accountId)
          .map((each) => ({ id: each.reservationId, status: each.status, parts: each.parts ?? zero })),
      ),
    ),
  );
}
