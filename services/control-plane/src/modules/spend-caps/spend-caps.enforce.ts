import type { ReserveItem } from '@tollgate/schemas';
import {
  type AccountCaps,
  type CapCall,
  capsOfKey,
  countedFor,
  type SpendCap,
} from './spend-caps.service.ts';
import { type CapPeriod, capWindow, checkCap, retryAfterSeconds } from './windows.ts';

/** What a call counts against caps: tokens, and their credit value at the alias's prices. */
export interface CapAmounts {
  credits: bigint;
  tokens: bigint;
}

export interface AliasPrices {
  inputPrice: bigint | null;
  outputPrice: bigint | null;
}

/**
 * A call's estimate as caps count it: its input estimate plus maximum output, in tokens, and in
 * credits at the alias's prices of now, whoever pays (a package or credit). An alias without a
 * credit price counts no credits (only token caps bound it).
 */
export function estimateAmounts(
  item: Pick<ReserveItem, 'estimate'>,
  prices: AliasPrices | undefined,
): CapAmounts {
  const input = BigInt(item.estimate.inputTokens);
  const output = BigInt(item.estimate.outputTokens);
  const priced = prices?.inputPrice != null && prices.outputPrice != null;
  return {
    tokens: input + output,
    credits: priced ? input * (prices.inputPrice as bigint) + output * (prices.outputPrice as bigint) : 0n,
  };
}

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
 * counted. Refused: the message names the cap that frees last, and Retry-After is when every cap
 * has room (absent when the call alone is larger than a rolling cap).
 */
export function judgeCall(
  account: AccountCaps,
  keyId: string,
  amounts: CapAmounts,
  calls: readonly CapCall[],
  now: number,
): CapVerdict {
  let worst: { cap: SpendCap; used: bigint; freeAt: number | null } | null = null;
  for (const cap of capsOfKey(account, keyId)) {
    const window = capWindow(cap.period, account.timeZone, now);
    const amount = cap.unit === 'credits' ? amounts.credits : amounts.tokens;
    const check = checkCap(cap.period, window, cap.limit, countedFor(cap, calls), amount);
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
