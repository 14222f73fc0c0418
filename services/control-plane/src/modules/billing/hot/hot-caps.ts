import type { HotStore } from './hot-store.ts';

/** One cap a call is judged against: its window as the control plane computed it. */
export interface HotCapWindow {
  /** Null: the whole account. */
  keyId: string | null;
  unit: 'credits' | 'tokens';
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

/** What a call counted, as status listings read it. */
export interface HotCountedCall {
  keyId: string;
  at: number;
  credits: bigint;
  tokens: bigint;
}

const STATE = { settled: 's', released: 'x', held: 'h' } as const;

/** Spend caps in Redis (hot-caps.lua.ts): judge and count, uncount, correct on finish, read. */
export function createHotCaps(store: HotStore) {
  return {
    async judge(
      accountId: string,
      window: { now: number; keepAfter: number; earliest: number },
      calls: HotCapCall[],
    ): Promise<HotCapVerdict[]> {
      const keys = store.keysOf(accountId);
      const replies = await store.runCaps<string[][]>(
        'hotCapReserve',
        [keys.capTimes, keys.capCalls],
        [
          window.now,
          window.keepAfter,
          window.earliest,
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
      await store.runCaps('hotCapUncount', [keys.capTimes, keys.capCalls], ids);
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
        [keys.capTimes, keys.capCalls],
        [
          items.length,
          ...items.flatMap((item) => [item.id, STATE[item.status], item.parts.map(String).join(',')]),
        ],
      );
    },
    async calls(accountId: string, since: number): Promise<HotCountedCall[]> {
      return store.readCapCalls(accountId, since);
    },
  };
}

export type HotCaps = ReturnType<typeof createHotCaps>;
