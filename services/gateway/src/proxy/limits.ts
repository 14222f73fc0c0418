import { randomUUID } from 'node:crypto';
import { AppError, toAppError } from '@tollgate/errors';
import type { PlanCeilings, RequestBudget, ReserveLimits, ResolvedKey } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import type { Lease, LimitDecision, LimitRequest } from '../limiter/limiter.ts';

/**
 * The limits of one call: the key's request ceiling and its package's (the package is per
 * account), and for metered calls a concurrency slot named `leaseId`.
 */
export function limitRequestOf(
  key: ResolvedKey,
  plan: PlanCeilings | null,
  options: { holdsSlot: boolean; leaseId?: string },
): LimitRequest {
  return {
    keyId: key.keyId,
    accountId: key.accountId,
    keyRequestsPerMinute: key.limits.requestsPerMinute,
    keyConcurrency: options.holdsSlot ? key.limits.concurrency : null,
    plan: planLimitsOf(key, plan, options.holdsSlot),
    leaseId: options.leaseId ?? randomUUID(),
  };
}

/** The same limits of a metered call, for the control plane to check in the step that reserves. */
export function reserveLimitsOf(key: ResolvedKey, plan: PlanCeilings | null): ReserveLimits {
  return {
    keyRequestsPerMinute: key.limits.requestsPerMinute,
    keyConcurrency: key.limits.concurrency,
    plan: planLimitsOf(key, plan, true),
  };
}

/** The package's ceilings, counted per account. */
function planLimitsOf(key: ResolvedKey, plan: PlanCeilings | null, holdsSlot: boolean): LimitRequest['plan'] {
  return (
    plan && {
      id: `${key.accountId}:${plan.packageId}`,
      requestsPerMinute: plan.requestsPerMinute,
      concurrency: holdsSlot ? plan.concurrency : null,
    }
  );
}

/**
 * Counts the call against its ceilings and, for metered calls, takes a concurrency slot. Refuses
 * with the limiter's code, Retry-After and the budget's headers. The lease, when one was taken,
 * must be released when the call ends.
 */
export async function takeLimits(
  deps: GatewayDependencies,
  key: ResolvedKey,
  plan: PlanCeilings | null,
  options: { holdsSlot: boolean; leaseId?: string },
): Promise<{ lease: Lease | null; budget: RequestBudget }> {
  const decision = await deps.limiter.acquire(limitRequestOf(key, plan, options));
  if (!decision.allowed) throw limitError(decision);
  return decision;
}

/** A refusal by the limits, with its Retry-After and, for a rate, the exhausted budget's headers. */
export function limitError(refused: {
  code: 'rate_limit_exceeded' | 'concurrency_limit_exceeded';
  retryAfterSeconds?: number;
  budget?: RequestBudget;
  /** Said instead of the catalogue's message (a spend cap names itself). */
  message?: string;
}): AppError {
  return new AppError(refused.code, {
    ...(refused.message ? { message: refused.message } : {}),
    ...(refused.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: refused.retryAfterSeconds }),
    ...(refused.budget ? { headers: budgetHeaders(refused.budget) } : {}),
  });
}

/**
 * The request budget as response headers, named as OpenAI names its own (the reset a duration in
 * seconds), so clients and tools that read them already understand them.
 */
export function budgetHeaders(budget: RequestBudget): Record<string, string> {
  return {
    'x-ratelimit-limit-requests': String(budget.limit),
    'x-ratelimit-remaining-requests': String(budget.remaining),
    'x-ratelimit-reset-requests': `${budget.resetSeconds}s`,
  };
}

/**
 * A call with a valid key refused by a check that needs no reservation (model, parameters, output
 * ceiling, body size) still counts against the key's request ceiling, without taking a
 * concurrency slot. Past the ceiling the refusal becomes rate_limit_exceeded; a limiter that cannot
 * be reached leaves the refusal as it was. Always throws.
 */
export async function countRefusal(
  deps: GatewayDependencies,
  key: ResolvedKey,
  error: unknown,
): Promise<never> {
  const refusal = toAppError(error);
  if (refusal.status < 400 || refusal.status >= 500 || refusal.code === 'client_disconnected') throw error;
  let decision: LimitDecision;
  try {
    decision = await deps.limiter.acquire(limitRequestOf(key, null, { holdsSlot: false }));
  } catch {
    throw error;
  }
  if (!decision.allowed) throw limitError(decision);
  throw error;
}
