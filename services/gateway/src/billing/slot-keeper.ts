import type { RenewSlotsRequest } from '@tollgate/schemas';
import type { Logger } from '@tollgate/service-kit';
import { type Lease, renewIntervalMs } from '../limiter/limiter.ts';

/** Calls named per renewal request (the internal API's bound). */
const MAX_PER_REQUEST = 5_000;

/**
 * The concurrency slots the control plane's hot tier took for this gateway's calls
 * (docs/decisions/one-owner-of-the-slot.md): the control plane takes each in the step that
 * reserves and frees it in the step that finishes the call; this gateway only tells it, every
 * third of the lease's life, which of its calls still run, so that a long stream keeps its slot
 * and a slot of a gateway that died expires within the lease's life. Release stops the renewal
 * only: the finish frees the slot.
 */
export function createSlotKeeper(
  renew: (request: RenewSlotsRequest) => Promise<unknown>,
  options: { leaseTtlMs: number; logger: Logger },
) {
  /** Reservation id -> account, of calls still running. */
  const running = new Map<string, string>();
  const timer = setInterval(() => {
    if (running.size === 0) return;
    const items = [...running].map(([reservationId, accountId]) => ({ reservationId, accountId }));
    for (let start = 0; start < items.length; start += MAX_PER_REQUEST) {
      renew({ leaseTtlMs: options.leaseTtlMs, items: items.slice(start, start + MAX_PER_REQUEST) }).catch(
        (error: unknown) =>
          options.logger.warn(
            { err: error },
            'could not renew concurrency slots (they expire by themselves)',
          ),
      );
    }
  }, renewIntervalMs(options.leaseTtlMs));
  timer.unref();

  return {
    /** The handle of the slot the control plane took for this call. */
    hold(reservationId: string, accountId: string): Lease {
      running.set(reservationId, accountId);
      return {
        release() {
          running.delete(reservationId);
          return Promise.resolve();
        },
      };
    },
    close() {
      clearInterval(timer);
      running.clear();
    },
  };
}

export type SlotKeeper = ReturnType<typeof createSlotKeeper>;
