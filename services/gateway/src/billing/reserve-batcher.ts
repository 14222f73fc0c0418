import type { ReserveBatchResponse, ReserveItem, ReserveResult } from '@tollgate/schemas';

interface Waiting {
  item: ReserveItem;
  resolve(result: ReserveResult): void;
  reject(error: unknown): void;
}

/**
 * Coalesces reservations into batches without waiting on a timer: a reservation goes out at once
 * while fewer than `maxInFlight` calls are under way; under load, those that queue up behind them
 * leave together in the next call. One request alone pays one round trip; many share them.
 */
export function createReserveBatcher(
  send: (items: ReserveItem[]) => Promise<ReserveBatchResponse>,
  options: { maxInFlight: number; maxBatch: number },
) {
  const queue: Waiting[] = [];
  let inFlight = 0;
  let scheduled = false;

  function dispatch(batch: Waiting[]): void {
    inFlight += 1;
    send(batch.map((waiting) => waiting.item))
      .then(
        (response) => {
          const byId = new Map(response.results.map((result) => [result.reservationId, result]));
          for (const waiting of batch) {
            const result = byId.get(waiting.item.reservationId);
            if (result) waiting.resolve(result);
            else waiting.reject(new Error('reservation missing from the batch answer'));
          }
        },
        (error: unknown) => {
          for (const waiting of batch) waiting.reject(error);
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

  return {
    reserve(item: ReserveItem): Promise<ReserveResult> {
      return new Promise((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          // Items queued in the same tick leave together.
          queueMicrotask(pump);
        }
      });
    },
  };
}
