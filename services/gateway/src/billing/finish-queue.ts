import type { FinishBatchResponse, FinishItem, FinishResult } from '@tollgate/schemas';
import type { Logger } from '@tollgate/service-kit';

export interface FinishQueueOptions {
  /** Longest an item waits for companions before its batch leaves. */
  flushIntervalMs: number;
  maxBatch: number;
  maxInFlight: number;
  /**
   * Bound on what waits in memory while the control plane is unreachable; past it the oldest go
   * to `spill` (the durable pending store), never dropped silently.
   */
  maxQueued: number;
  spill?: (items: FinishItem[]) => Promise<void>;
  logger: Logger;
}

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;

/**
 * Settles, releases and holds leave the response path: they are queued and sent in batches (one
 * durable commit each). A batch that fails is retried with backoff; finish is idempotent by
 * reservation id, so a retry after an unclear failure charges nothing twice. What is still
 * unacknowledged at shutdown (or overflows) goes to the durable pending store and is delivered
 * later; a finish that never arrives at all (the process was killed) is held by the control
 * plane's reconciler as `settlement_missing`, for review.
 */
export function createFinishQueue(
  send: (items: FinishItem[]) => Promise<FinishBatchResponse>,
  options: FinishQueueOptions,
) {
  let queue: FinishItem[] = [];
  let inFlight = 0;
  let timer: NodeJS.Timeout | null = null;
  /** A send on the next turn of the event loop (setTimeout would wait a millisecond at least). */
  let immediate: NodeJS.Immediate | null = null;
  let retryDelay = 0;
  let idleWaiters: Array<() => void> = [];
  let stopped = false;
  /** Batches sent and not yet acknowledged. */
  const sending = new Set<FinishItem[]>();
  /** Unacknowledged items per account, and who waits for an account to have none. */
  const byAccount = new Map<string, number>();
  const accountWaiters = new Map<string, Array<() => void>>();
  /**
   * Who waits for an item's result (a receipt: what the control plane charged), by reservation
   * id; told null when the item leaves this queue unanswered (spilled or stopped).
   */
  const resultWaiters = new Map<string, (result: FinishResult | null) => void>();

  function tell(reservationId: string, result: FinishResult | null): void {
    const waiter = resultWaiters.get(reservationId);
    if (!waiter) return;
    resultWaiters.delete(reservationId);
    waiter(result);
  }

  function acknowledged(batch: FinishItem[]): void {
    for (const item of batch) {
      const left = (byAccount.get(item.accountId) ?? 1) - 1;
      if (left > 0) {
        byAccount.set(item.accountId, left);
        continue;
      }
      byAccount.delete(item.accountId);
      const waiters = accountWaiters.get(item.accountId);
      accountWaiters.delete(item.accountId);
      for (const wake of waiters ?? []) wake();
    }
  }

  function schedule(delay: number): void {
    if (timer) return;
    timer = setTimeout(() => {
      timer = null;
      flush();
    }, delay);
  }

  /** Sends on the next turn of the event loop, so items queued in this one share the batch. */
  function soon(): void {
    if (immediate) return;
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    immediate = setImmediate(() => {
      immediate = null;
      flush();
    });
  }

  function settleWaiters(): void {
    if (queue.length === 0 && inFlight === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  function sent(batch: FinishItem[]): void {
    inFlight -= 1;
    sending.delete(batch);
  }

  /**
   * After a batch returns: someone waits for an account's items (settledFor) or for a receipt, so
   * the rest leave at once; else after the flush interval (or the retry's backoff).
   */
  function next(): void {
    if (queue.length === 0 || stopped) return;
    if (resultWaiters.size > 0 && retryDelay === 0) flush();
    else schedule(retryDelay || (accountWaiters.size > 0 ? 0 : options.flushIntervalMs));
  }

  function flush(): void {
    // Items a receipt waits for leave one batch at a time: what queues while a batch is under way
    // leaves together when it returns (a group commit), so waiting adds one round trip, and the
    // control plane does not pay a durable commit per call.
    const limit = resultWaiters.size > 0 ? 1 : options.maxInFlight;
    while (!stopped && queue.length > 0 && inFlight < limit) {
      const batch = queue.slice(0, options.maxBatch);
      queue = queue.slice(batch.length);
      inFlight += 1;
      sending.add(batch);
      send(batch).then(
        (response) => {
          retryDelay = 0;
          sent(batch);
          acknowledged(batch);
          const told = response.results.flatMap((result) => {
            const waiter = resultWaiters.get(result.reservationId);
            resultWaiters.delete(result.reservationId);
            return waiter ? [() => waiter(result)] : [];
          });
          // The next batch leaves before these answers are written: what queued meanwhile waits
          // for one round trip, not also for the writing of these answers.
          next();
          for (const wake of told) wake();
          settleWaiters();
        },
        (error: unknown) => {
          sent(batch);
          if (stopped) {
            settleWaiters();
            return;
          }
          queue = [...batch, ...queue];
          retryDelay = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, retryDelay * 2));
          options.logger.warn(
            { err: error, items: batch.length, retryInMs: retryDelay },
            'finish batch failed; will retry',
          );
          next();
          settleWaiters();
        },
      );
      if (retryDelay > 0) break;
    }
  }

  return {
    /**
     * Queues a finish. With `onResult`, the control plane's answer for it (what it charged) is
     * passed on when it lands, or null if the item leaves this queue unanswered; such an item
     * leaves at once with whatever is queued, rather than after the flush interval.
     */
    enqueue(item: FinishItem, onResult?: (result: FinishResult | null) => void): void {
      queue.push(item);
      if (onResult) resultWaiters.set(item.reservationId, onResult);
      byAccount.set(item.accountId, (byAccount.get(item.accountId) ?? 0) + 1);
      if (queue.length > options.maxQueued) {
        const spilled = queue.splice(0, queue.length - options.maxQueued);
        acknowledged(spilled);
        for (const spilledItem of spilled) tell(spilledItem.reservationId, null);
        const kept = options.spill ? options.spill(spilled) : Promise.reject(new Error('no pending store'));
        kept.then(
          () =>
            options.logger.warn({ items: spilled.length }, 'finish queue full: oldest items kept for later'),
          (error: unknown) =>
            options.logger.error(
              {
                err: error,
                items: spilled.length,
                reservationIds: spilled.map((item) => item.reservationId),
              },
              'finish queue full and items could not be kept: the reconciler holds them as settlement_missing',
            ),
        );
      }
      if (queue.length >= options.maxBatch && retryDelay === 0) flush();
      else if (onResult && retryDelay === 0) soon();
      else schedule(retryDelay || options.flushIntervalMs);
    },
    /**
     * Sends this account's queued items now and resolves true once the control plane has all of
     * them (false past the deadline, or at once if there were none). Near the end of a balance a
     * finished call's reservation is still held until its settlement lands; waiting for it lets
     * the account's next call see what is really left.
     */
    async settledFor(accountId: string, deadlineMs: number): Promise<boolean> {
      if (!byAccount.has(accountId)) return false;
      const done = new Promise<true>((resolve) => {
        const waiters = accountWaiters.get(accountId) ?? [];
        waiters.push(() => resolve(true));
        accountWaiters.set(accountId, waiters);
      });
      if (timer && retryDelay === 0) {
        clearTimeout(timer);
        timer = null;
        flush();
      }
      let expire: NodeJS.Timeout | undefined;
      const deadline = new Promise<false>((resolve) => {
        expire = setTimeout(() => resolve(false), deadlineMs);
      });
      try {
        return await Promise.race([done, deadline]);
      } finally {
        clearTimeout(expire);
      }
    },
    /** Stops sending and retrying; returns every item not acknowledged (sent or not). */
    stop(): FinishItem[] {
      stopped = true;
      if (immediate) {
        clearImmediate(immediate);
        immediate = null;
      }
      if (timer) {
        clearTimeout(timer);
        timer = null;
      }
      const left = [...[...sending].flat(), ...queue];
      queue = [];
      for (const reservationId of [...resultWaiters.keys()]) tell(reservationId, null);
      return left;
    },
    /** Items not yet acknowledged by the control plane. */
    pending(): number {
      return queue.length + inFlight;
    },
    /** Sends everything now and resolves when the control plane has it all (or the deadline passes). */
    async drain(deadlineMs = 10_000): Promise<boolean> {
      if (timer) {
        clearTimeout(timer);
        timer = null;
      }
      retryDelay = 0;
      flush();
      if (queue.length === 0 && inFlight === 0) return true;
      const idle = new Promise<true>((resolve) => idleWaiters.push(() => resolve(true)));
      const deadline = new Promise<false>((resolve) => setTimeout(() => resolve(false), deadlineMs).unref());
      return Promise.race([idle, deadline]);
    },
  };
}
