import {
  type AccountCaps,
  type CapCounts,
  capsOfKey,
  countedFor,
  type SpendCap,
} from './spend-caps.counting.ts';
import type { CapAmounts } from './spend-caps.prices.ts';
import { type CapPeriod, capWindow, checkCap, retryAfterSeconds } from './windows.ts';

export type CapVerdict =
  | { ok: true }
  | { ok: false; message: string; retryAfterSeconds?: number; cap: SpendCap };

const PERIOD_WORDS: Record<CapPeriod, string> = {
  '5h': 'per 5 hours (rolling)',
  day: 'per day',
  week: 'per week',
  month: 'per month',
};

/** The refusal's message: which cap, its limit and window, and when to retry. */
export function capMessage(cap: SpendCap, timeZone: string, used: bigint, freeAt: number | null): string {
  const on = cap.keyId === null ? 'The account' : 'This key';
  const window = cap.period === '5h' ? PERIOD_WORDS[cap.period] : `${PERIOD_WORDS[cap.period]} (${timeZone})`;
  const by =
    cap.setBy === 'customer' ? 'the account' : cap.setBy === 'reseller' ? 'the reseller' : 'the operator';
  const when =
    freeAt === null
      ? 'This call alone is more than the cap allows.'
      : `Enough frees at ${new Date(freeAt).toISOString()}.`;
  return `Spend cap reached: ${on} may use at most ${cap.limit} ${cap.unit} ${window}, a cap set by ${by}; ${used} used. ${when}`;
}

/**
 * Whether a call with these amounts fits every cap that bounds its key, counting the calls already
 * counted (the rolling window's calls, the calendar windows' sums). Refused: the message names the cap that frees last, and Retry-After is when every cap
 * has room (absent when the call alone is larger than a rolling cap).
 */
export function judgeCall(
  account: AccountCaps,
  keyId: string,
  amounts: CapAmounts,
  counts: CapCounts,
  now: number,
): CapVerdict {
  let worst: { cap: SpendCap; used: bigint; freeAt: number | null } | null = null;
  for (const cap of capsOfKey(account, keyId)) {
    const window = capWindow(cap.period, account.timeZone, now);
    const amount = cap.unit === 'credits' ? amounts.credits : amounts.tokens;
    const check = checkCap(cap.period, window, cap.limit, countedFor(cap, counts, window), amount);
    if (check.fits) continue;
    if (!worst || (worst.freeAt !== null && (check.freeAt === null || check.freeAt > worst.freeAt))) {
      worst = { cap, used: check.used, freeAt: check.freeAt };
    }
  }
  if (!worst) return { ok: true };
  return {
    ok: false,
    cap: worst.cap,
    message: capMessage(worst.cap, account.timeZone, worst.used, worst.freeAt),
    ...(worst.freeAt === null ? {} : { retryAfterSeconds: retryAfterSeconds(worst.freeAt, now) }),
  };
}
