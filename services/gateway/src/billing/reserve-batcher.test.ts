import { randomUUID } from 'node:crypto';
import type { ReserveBatchResponse, ReserveItem } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { createReserveBatcher, mayHaveReserved } from './reserve-batcher.ts';

function item(): ReserveItem {
  return {
    reservationId: randomUUID(),
    keyDigest: 'a'.repeat(64),
    keyId: 'k',
    accountId: 'a',
    alias: 'm',
    surface: 'messages',
    estimate: { inputTokens: '1', outputTokens: '1' },
  };
}

/** A control plane that answers only after `ms`; `onSend` hears of each batch as it is sent. */
function slowSend(ms: number, onSend: () => void = () => {}) {
  return (items: ReserveItem[]) => {
    onSend();
    return new Promise<ReserveBatchResponse>((resolve) =>
      // The control plane's slowness in real time is what these tests are about.
      setTimeout(
        () =>
          resolve({
            results: items.map((one) => ({
              ok: true as const,
              reservationId: one.reservationId,
              keyId: 'k',
              accountId: 'a',
              providerId: 'p',
              upstreamModel: 'u',
              reserved: { tokens: '0', credits: '2' },
              limited: false,
            })),
          }),
        ms,
      ),
    );
  };
}

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => null,
    (error: unknown) => error,
  );
}

describe('reserve batcher deadline', () => {
  it('counts the time in the queue: a reservation behind a slow call fails at the deadline, not after', async () => {
    let firstSent!: () => void;
    const sending = new Promise<void>((resolve) => {
      firstSent = resolve;
    });
    const batcher = createReserveBatcher(
      slowSend(1_000, () => firstSent()),
      {
        maxInFlight: 1,
        maxBatch: 10,
        timeoutMs: 200,
      },
    );
    const started = performance.now();
    const first = failureOf(batcher.reserve(item()));
    await sending; // the first is in flight: the second waits in the queue behind it
    const second = failureOf(batcher.reserve(item()));
    const [firstError, secondError] = await Promise.all([first, second]);
    expect(performance.now() - started).toBeLessThan(600);
    expect(firstError).toMatchObject({ code: 'billing_unavailable' });
    expect(secondError).toMatchObject({ code: 'billing_unavailable' });
    // The first was sent and may be committed; the second never left the queue.
    expect(mayHaveReserved(firstError)).toBe(true);
    expect(mayHaveReserved(secondError)).toBe(false);
  });

  it('answers within the deadline as before', async () => {
    const batcher = createReserveBatcher(slowSend(10), { maxInFlight: 1, maxBatch: 10, timeoutMs: 500 });
    const results = await Promise.all([batcher.reserve(item()), batcher.reserve(item())]);
    expect(results.map((result) => result.ok)).toEqual([true, true]);
  });
});

describe('reserve batcher coalescing', () => {
  /** A control plane that answers each batch when told to, and records what each batch held. */
  function heldSend() {
    const batches: string[][] = [];
    const answers: Array<() => void> = [];
    const send = (items: ReserveItem[]) => {
      batches.push(items.map((one) => one.reservationId));
      return new Promise<ReserveBatchResponse>((resolve) => {
        answers.push(() => slowSend(0)(items).then(resolve));
      });
    };
    const answerAll = () => {
      for (const answer of answers.splice(0)) answer();
    };
    return { send, batches, answerAll };
  }

  it('sends a lone reservation at once', async () => {
    const control = heldSend();
    const batcher = createReserveBatcher(control.send, { maxInFlight: 2, maxBatch: 10, timeoutMs: 1_000 });
    const lone = item();
    const answered = batcher.reserve(lone);
    await Promise.resolve(); // one microtask: no turn of the event loop is waited for
    expect(control.batches).toEqual([[lone.reservationId]]);
    control.answerAll();
    expect((await answered).ok).toBe(true);
  });

  it('with a batch under way, sends what arrives in the same turn of the event loop as one batch', async () => {
    const control = heldSend();
    const batcher = createReserveBatcher(control.send, { maxInFlight: 2, maxBatch: 10, timeoutMs: 1_000 });
    const first = item();
    const pending = [batcher.reserve(first)];
    await Promise.resolve();
    // Two requests read from two sockets in one poll phase: each handler runs after the other's
    // microtasks, within the same turn.
    const [second, third] = [item(), item()];
    pending.push(batcher.reserve(second));
    await Promise.resolve();
    pending.push(batcher.reserve(third));
    await new Promise((resolve) => setImmediate(resolve));
    expect(control.batches).toEqual([[first.reservationId], [second.reservationId, third.reservationId]]);
    control.answerAll();
    expect((await Promise.all(pending)).map((result) => result.ok)).toEqual([true, true, true]);
  });
});
