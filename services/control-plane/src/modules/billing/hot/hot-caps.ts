import type { CalendarPeriod, CapCounts } from '../../spend-caps/spend-caps.counting.ts';
import type { CapPeriod } from '../../spend-caps/windows.ts';
import type { HotStore } from './hot-store.ts';

/** One cap a call is judged against: its window as the control plane computed it. */
export interface HotCapWindow {
  /** Null: the whole account. */
  keyId: string | null;
  unit: 'credits' | 'tokens';
  period: CapPeriod;
  start: number;
  /** Null: the rolling window. */
  end: number | null;
  limit: bigint;
}

export interface HotCapCall {
  id: string;
  keyId: string;
  credits: bigint;
  tokens: bigint;
  /** input, output, cache read, cache write, 1-hour cache write, per call; null: unpriced. */
  prices: bigint[] | null;
  caps: HotCapWindow[];
}

export type HotCapVerdict =
  | { ok: true }
  | { ok: false; capIndex: number; used: bigint; freeAt: number | null };

/** What one script needs of the clock: the instant, the current calendar windows, how far back to read and keep. */
export interface HotCapClock {
  now: number;
  /** The rolling window's start: calls counted before leave its sums; finished ones are dropped. */
  rollingSince: number;
  /** Sums of windows ending before are not read. */
  countersSince: number;
  /** Sums of windows ending before are dropped. */
  pruneBefore: number;
  /** When the sums expire unless a later call counts (32 days after the latest window ends). */
  expireAt: number;
  windows: Array<{ period: CalendarPeriod; start: number; end: number }>;
}

const STATE = { settled: 's', released: 'x', held: 'h' } as const;

/** Spend caps in Redis (hot-caps.lua.ts): judge and count, uncount, correct on finish, read. */
export function createHotCaps(store: HotStore) {
  return {
    async judge(accountId: string, clock: HotCapClock, calls: HotCapCall[]): Promise<HotCapVerdict[]> {
      const keys = store.keysOf(accountId);
      const replies = await store.runCaps<string[][]>(
        'hotCapReserve',
        [keys.capTimes, keys.capCalls, keys.capCounters, keys.capWindows],
        [
          clock.now,
          clock.rollingSince,
          clock.countersSince,
          clock.pruneBefore,
          clock.expireAt,
          ...clock.windows.flatMap((window) => [window.start, window.end]),
          calls.length,
          ...calls.flatMap((call) => [
            call.id,
            call.keyId,
            call.credits.toString(),
            call.tokens.toString(),
            call.prices?.join(',') ?? '',
            call.caps.length,
            ...call.caps.flatMap((cap) => [
              cap.keyId ?? '',
              cap.unit,
              cap.period,
              cap.start,
              cap.end ?? '',
              cap.limit.toString(),
            ]),
          ]),
        ],
      );
      return replies.map((reply) =>
        reply[0] === 'ok'
          ? { ok: true }
          : {
              ok: false,
              capIndex: Number(reply[1]) - 1,
              used: BigInt(reply[2] ?? '0'),
              freeAt: reply[3] ? Number(reply[3]) : null,
            },
      );
    },
    async uncount(accountId: string, ids: string[]): Promise<void> {
      if (ids.length === 0) return;
      const keys = store.keysOf(accountId);
      await store.runCaps('hotCapUncount', [keys.capTimes, keys.capCalls, keys.capCounters], ids);
    },
    async finish(
      accountId: string,
      /** parts: input, output, cache read, cache write, 1-hour cache write. */
      items: Array<{ id: string; status: keyof typeof STATE; parts: bigint[] }>,
    ): Promise<void> {
      if (items.length === 0) return;
      const keys = store.keysOf(accountId);
      await store.runCaps(
        'hotCapFinish',
        [keys.capTimes, keys.capCalls, keys.capCounters],
        [
          items.length,
          ...items.flatMap((item) => [item.id, STATE[item.status], item.parts.map(String).join(',')]),
        ],
      );
    },
    async counts(
      accountId: string,
      since: { callsSince: number | null; countersSince: number },
    ): Promise<CapCounts> {
      return store.readCapCounts(accountId, since);
    },
  };
}

export type HotCaps = ReturnType<typeof createHotCaps>;
