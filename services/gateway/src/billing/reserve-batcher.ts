import { AppError } from '@tollgate/errors';
import type { ReserveBatchResponse, ReserveItem, ReserveResult } from '@tollgate/schemas';

interface Waiting {
  item: ReserveItem;
  sent: boolean;
  done: boolean;
  timer: NodeJS.Timeout;
  resolve(result: ReserveResult): void;
  reject(error: unknown): void;
}

/** Cause codes of a reservation that never left this process: nothing can have been reserved. */
const RESERVE_NOT_SENT = 'RESERVE_NOT_SENT';
const RESERVE_TIMED_OUT = 'RESERVE_TIMED_OUT';

function billingTimeout(code: string, message: string): AppError {
  return new AppError('billing_unavailable', { cause: Object.assign(new Error(message), { code }) });
}

/**
 * Coalesces reservations into batches without waiting on a timer: a reservation goes out at once
 * when no call is under way, and at the end of the event loop's turn while fewer than `maxInFlight`
 * are (so the requests read in that turn share it); under load, those that queue up behind them
 * leave together in the next call. One request alone pays one round trip; many share them.
 * Each reservation gets `timeoutMs` in total, time in the queue included; past it the caller
 * gets billing_unavailable (the gateway then releases it by id in case it was committed).
 */
export function createReserveBatcher(
  send: (items: ReserveItem[]) => Promise<ReserveBatchResponse>,
  options: { maxInFlight: number; maxBatch: number; timeoutMs: number },
) {
  let queue: Waiting[] = [];
  let inFlight = 0;
  let scheduled = false;

  function settle(waiting: Waiting, outcome: () => void): void {
    if (waiting.done) return;
    waiting.done = true;
    clearTimeout(waiting.timer);
    outcome();
  }

  function dispatch(batch: Waiting[]): void {
    inFlight += 1;
    for (const waiting of batch) waiting.sent = true;
    send(batch.map((waiting) => waiting.item))
      .then(
        (response) => {
          const byId = new Map(response.results.map((result) => [result.reservationId, result]));
          for (const waiting of batch) {
            const result = byId.get(waiting.item.reservationId);
            settle(waiting, () =>
              result
                ? waiting.resolve(result)
                : waiting.reject(
                    new AppError('billing_unavailable', { cause: new Error('missing from batch') }),
                  ),
            );
          }
        },
        (error: unknown) => {
          for (const waiting of batch) settle(waiting, () => waiting.reject(error));
        },
      )
      .finally(() => {
        inFlight -= 1;
        pump();
      });
  }

  function pump(): void {
    scheduled = false;
    while (queue.length > 0 && inFlight < options.maxInFlight) {
      dispatch(queue.splice(0, options.maxBatch));
    }
  }

  function expire(waiting: Waiting): void {
    settle(waiting, () => {
      if (!waiting.sent) {
        queue = queue.filter((other) => other !== waiting);
        waiting.reject(billingTimeout(RESERVE_NOT_SENT, 'reservation waited in the queue past the deadline'));
      } else {
        waiting.reject(billingTimeout(RESERVE_TIMED_OUT, 'reservation answer did not arrive in time'));
      }
    });
  }

  return {
    reserve(item: ReserveItem): Promise<ReserveResult> {
      return new Promise((resolve, reject) => {
        const waiting: Waiting = {
          item,
          sent: false,
          done: false,
          resolve,
          reject,
          timer: setTimeout(() => expire(waiting), options.timeoutMs),
        };
        queue.push(waiting);
        if (!scheduled) {
          scheduled = true;
          // Items queued in the same tick leave together; with a batch already under way, so do
          // those that arrive in this turn of the event loop (the other sockets' reads of it).
          if (inFlight === 0) queueMicrotask(pump);
          else setImmediate(pump);
        }
      });
    },
  };
}

/**
 * Whether a failed reservation may have been committed at the control plane anyway (its answer
 * timed out or was lost). Refused connections and reservations that never left cannot have been.
 */
export function mayHaveReserved(error: unknown): boolean {
  if (!(error instanceof AppError) || error.code !== 'billing_unavailable') return false;
  let cause: unknown = error.cause;
  if (cause === undefined) return false; // a clear refusal or a 5xx: nothing was committed
  for (let depth = 0; depth < 5 && cause; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_REACHED.has(code)) return false;
    cause = (cause as { cause?: unknown }).cause;
  }
  return true;
}

const NOT_REACHED = new Set([
  RESERVE_NOT_SENT,
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);
