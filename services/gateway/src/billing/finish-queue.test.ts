import { randomUUID } from 'node:crypto';
import type { FinishBatchResponse, FinishItem } from '@tollgate/schemas';
import { createLogger } from '@tollgate/service-kit';
import { describe, expect, it } from 'vitest';
import { createFinishQueue } from './finish-queue.ts';

const logger = createLogger({ name: 'finish-queue-test', level: 'silent' });

function item(accountId: string): FinishItem {
  return {
    action: 'release',
    reservationId: randomUUID(),
    keyId: 'k',
    accountId,
    alias: 'a',
    surface: 'messages',
    httpStatus: 503,
    occurredAt: new Date().toISOString(),
    outcome: 'upstream_unavailable',
  };
}

const accepted = (items: FinishItem[]): FinishBatchResponse => ({
  results: items.map((one) => ({
    reservationId: one.reservationId,
    status: 'released' as const,
    replay: false,
    charged: { tokens: '0', credits: '0' },
    writtenOff: { tokens: '0', credits: '0' },
  })),
});

describe('finish queue', () => {
  it("sends an account's items at once when asked, instead of after the flush interval", async () => {
    const sent: FinishItem[][] = [];
    const send = async (items: FinishItem[]) => {
      sent.push(items);
      return accepted(items);
    };
    const queue = createFinishQueue(send, {
      flushIntervalMs: 60_000,
      maxBatch: 100,
      maxInFlight: 1,
      maxQueued: 1000,
      logger,
    });
    queue.enqueue(item('a'));
    queue.enqueue(item('b'));
    expect(await queue.settledFor('none', 1_000)).toBe(false);
    const started = performance.now();
    expect(await queue.settledFor('a', 1_000)).toBe(true);
    expect(performance.now() - started).toBeLessThan(500);
    expect(sent.flat().map((one) => one.accountId)).toContain('a');
    queue.stop();
  });

  it("tells a waiter its item's result, sends such an item at once with those queued, and null on stop", async () => {
    const sent: FinishItem[][] = [];
    let failing = false;
    const send = async (items: FinishItem[]) => {
      sent.push(items);
      if (failing) throw new Error('control plane unreachable');
      return accepted(items);
    };
    const queue = createFinishQueue(send, {
      flushIntervalMs: 60_000,
      maxBatch: 100,
      maxInFlight: 1,
      maxQueued: 1000,
      logger,
    });
    const quiet = item('a');
    const watched = item('a');
    queue.enqueue(quiet);
    const result = new Promise((resolve) => queue.enqueue(watched, resolve));
    expect(await result).toMatchObject({ reservationId: watched.reservationId, status: 'released' });
    expect(sent).toEqual([[quiet, watched]]);

    failing = true;
    const unanswered = item('a');
    const never = new Promise((resolve) => queue.enqueue(unanswered, resolve));
    // Polls: the queue announces no retry, and the second send is the event this waits for.
    while (sent.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(queue.stop()).toContainEqual(unanswered);
    expect(await never).toBeNull();
  });

  it('hands back every unacknowledged item on stop, sent or still queued, and spills past its bound', async () => {
    const spilled: FinishItem[] = [];
    let firstSent!: () => void;
    const sending = new Promise<void>((resolve) => {
      firstSent = resolve;
    });
    // A control plane that never answers; the first batch sent is announced.
    const send = () => {
      firstSent();
      return new Promise<FinishBatchResponse>(() => {});
    };
    const queue = createFinishQueue(send, {
      flushIntervalMs: 10,
      maxBatch: 2,
      maxInFlight: 1,
      maxQueued: 3,
      spill: async (items) => {
        spilled.push(...items);
      },
      logger,
    });
    const items = Array.from({ length: 6 }, () => item('a'));
    for (const one of items.slice(0, 2)) queue.enqueue(one);
    await sending; // the first batch is in flight, unanswered
    for (const one of items.slice(2)) queue.enqueue(one);
    const left = queue.stop();
    expect(spilled).toHaveLength(1);
    expect(new Set([...left, ...spilled].map((one) => one.reservationId))).toEqual(
      new Set(items.map((one) => one.reservationId)),
    );
  });

  it('sends what queued behind a batch before telling that batch its receipts', async () => {
    const sent: FinishItem[][] = [];
    const answers: Array<() => void> = [];
    // A control plane that answers each batch when the test says so.
    const send = (items: FinishItem[]) => {
      sent.push(items);
      return new Promise<FinishBatchResponse>((resolve) => answers.push(() => resolve(accepted(items))));
    };
    const queue = createFinishQueue(send, {
      flushIntervalMs: 60_000,
      maxBatch: 100,
      maxInFlight: 4,
      maxQueued: 1000,
      logger,
    });
    const first = item('a');
    const sentWhenTold: number[] = [];
    queue.enqueue(first, () => sentWhenTold.push(sent.length));
    while (sent.length < 1) await new Promise((resolve) => setImmediate(resolve));
    // Two more arrive while the first batch is under way: they wait for it, then leave together.
    const behind = [item('a'), item('b')];
    const results = behind.map((one) => new Promise((resolve) => queue.enqueue(one, resolve)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toHaveLength(1);
    answers.shift()!();
    while (sentWhenTold.length === 0) await new Promise((resolve) => setImmediate(resolve));
    expect(sentWhenTold).toEqual([2]);
    expect(sent[1]).toEqual(behind);
    answers.shift()!();
    expect(await Promise.all(results)).toMatchObject(behind.map(({ reservationId }) => ({ reservationId })));
    queue.stop();
  });
});
