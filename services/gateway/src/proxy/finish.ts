import type { AppError } from '@tollgate/errors';
import type { FinishItem, FinishOutcome, MeteredSurface } from '@tollgate/schemas';
import type { StreamOutcome, UsageFigures } from '../upstream/index.ts';

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

/** Status recorded for a client that left: it never saw an answer. */
export const CLIENT_GONE_STATUS = 499;

/**
 * What becomes of a reservation once its call is over: settle reported usage, release when
 * nothing valid came back (or the client left before any output), hold when usage is unknown.
 */
export type Decision =
  | { action: 'settle'; usage: UsageFigures; outcome: FinishOutcome; httpStatus: number }
  | { action: 'release' | 'hold'; outcome: FinishOutcome; httpStatus: number };

export const decide = {
  settle: (usage: UsageFigures, httpStatus: number, outcome: FinishOutcome = 'ok'): Decision => ({
    action: 'settle',
    usage,
    outcome,
    httpStatus,
  }),
  release: (outcome: FinishOutcome, httpStatus: number): Decision => ({
    action: 'release',
    outcome,
    httpStatus,
  }),
  hold: (outcome: FinishOutcome, httpStatus: number): Decision => ({ action: 'hold', outcome, httpStatus }),
  /** A failure before a valid answer: released; as client_disconnected if the client had left. */
  failed: (error: AppError, clientGone: boolean): Decision =>
    clientGone
      ? { action: 'release', outcome: 'client_disconnected', httpStatus: CLIENT_GONE_STATUS }
      : { action: 'release', outcome: outcomeOf(error), httpStatus: error.status },
  /**
   * A client that left after output started: the provider's reported usage is charged (it bills
   * us for it); without usage the reservation is held, never released.
   */
  clientGone: (usage: UsageFigures | null): Decision =>
    usage === null
      ? { action: 'hold', outcome: 'client_disconnected', httpStatus: CLIENT_GONE_STATUS }
      : { action: 'settle', usage, outcome: 'client_disconnected', httpStatus: CLIENT_GONE_STATUS },
};

/** The reservation's decision for each way a relayed stream can end. */
export function decideStream(outcome: StreamOutcome): Decision {
  switch (outcome.kind) {
    case 'completed':
      return decide.settle(outcome.usage, 200);
    case 'no_usage':
      return decide.hold('billing_settlement_pending', 200);
    case 'upstream_failed':
      // Part of the answer reached the client: usage is unknown, so hold, never guess.
      return decide.hold(outcomeOf(outcome.error), outcome.error.status);
    case 'client_disconnected':
      return outcome.started
        ? decide.clientGone(outcome.usage)
        : decide.release('client_disconnected', CLIENT_GONE_STATUS);
  }
}

export interface ReservationContext {
  reservationId: string;
  keyId: string;
  accountId: string;
  alias: string;
  surface: MeteredSurface;
}

/**
 * The finish message of a decided reservation, as the control plane takes it; with the upstream
 * that answered (or was tried last) and the number tried, when the call reached one.
 */
export function finishItemOf(
  context: ReservationContext,
  decision: Decision,
  route: FinishItem['route'] | null = null,
): FinishItem {
  const base = {
    ...context,
    occurredAt: new Date().toISOString(),
    outcome: decision.outcome,
    ...(route
      ? {
          route: {
            providerId: route.providerId,
            upstreamModel: route.upstreamModel,
            attempts: route.attempts,
          },
        }
      : {}),
  };
  if (decision.action === 'settle') {
    return {
      ...base,
      action: 'settle',
      httpStatus: decision.httpStatus,
      usage: {
        inputTokens: String(decision.usage.inputTokens),
        outputTokens: String(decision.usage.outputTokens),
        cacheReadTokens: String(decision.usage.cacheReadTokens),
        cacheWriteTokens: String(decision.usage.cacheWriteTokens),
        cacheWrite1hTokens: String(decision.usage.cacheWrite1hTokens),
      },
    };
  }
  return { ...base, action: decision.action, httpStatus: decision.httpStatus };
}
