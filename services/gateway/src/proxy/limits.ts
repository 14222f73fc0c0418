import { randomUUID } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import type { PlanCeilings, ResolvedKey } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import type { Lease } from '../limiter/limiter.ts';

/**
 * Counts the call against the key's request ceiling and its package's (the package is per
 * account), and for metered calls takes a concurrency slot. Refuses with the limiter's code and
 * Retry-After. The lease, when one was taken, must be released when the call ends.
 */
export async function takeLimits(
  deps: GatewayDependencies,
  key: ResolvedKey,
  plan: PlanCeilings | null,
  options: { holdsSlot: boolean },
): Promise<Lease | null> {
  const decision = await deps.limiter.acquire({
    keyId: key.keyId,
    accountId: key.accountId,
    keyRequestsPerMinute: key.limits.requestsPerMinute,
    keyConcurrency: options.holdsSlot ? key.limits.concurrency : null,
    plan: plan && {
      id: `${key.accountId}:${plan.packageId}`,
      requestsPerMinute: plan.requestsPerMinute,
      concurrency: options.holdsSlot ? plan.concurrency : null,
    },
    leaseId: randomUUID(),
  });
  if (!decision.allowed) throw new AppError(decision.code, { retryAfterSeconds: decision.retryAfterSeconds });
  return decision.lease;
}
