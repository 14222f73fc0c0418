import type { AppError } from '@tollgate/errors';
import type { FinishItem, FinishOutcome, MeteredSurface } from '@tollgate/schemas';
import type { UsageFigures } from '../upstream/index.ts';

const RECORDED_OUTCOMES = new Set<string>([
  'upstream_rejected',
  'upstream_unavailable',
  'upstream_invalid_response',
  'billing_settlement_pending',
  'client_disconnected',
]);

export function outcomeOf(error: AppError): FinishOutcome {
  return RECORDED_OUTCOMES.has(error.code) ? (error.code as FinishOutcome) : 'gateway_error';
}

export interface ReservationContext {
  reservationId: string;
  keyId: string;
  accountId: string;
  alias: string;
  surface: MeteredSurface;
}

/**
 * Finishes a reservation exactly once, whatever path the request takes: settle from reported
 * usage, release when nothing valid came back (or the client left), hold when usage is unknown.
 */
export function createReservationFinisher(context: ReservationContext, enqueue: (item: FinishItem) => void) {
  let finished = false;
  function send(item: FinishItem): void {
    if (finished) return;
    finished = true;
    enqueue(item);
  }
  const base = () => ({ ...context, occurredAt: new Date().toISOString() });
  return {
    settle(usage: UsageFigures, httpStatus: number): void {
      send({
        ...base(),
        action: 'settle',
        outcome: 'ok',
        httpStatus,
        usage: { inputTokens: String(usage.inputTokens), outputTokens: String(usage.outputTokens) },
      });
    },
    release(outcome: FinishOutcome, httpStatus: number): void {
      send({ ...base(), action: 'release', outcome, httpStatus });
    },
    hold(outcome: FinishOutcome, httpStatus: number): void {
      send({ ...base(), action: 'hold', outcome, httpStatus });
    },
  };
}

export type ReservationFinisher = ReturnType<typeof createReservationFinisher>;
