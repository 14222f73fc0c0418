import type { GatewayDependencies } from '../deps.ts';
import type { Lease } from '../limiter/limiter.ts';
import type { UpstreamTarget } from './upstream-order.ts';

/** A ceiling the limiter's per-minute count never reaches: an upstream with a concurrency cap only. */
const NO_RATE = 1_000_000_000;

/**
 * Takes a place under the upstream's own limits on the operator's account (docs/routing.md):
 * `max_concurrency` calls at once and `requests_per_minute`, counted by the key limiter (Redis:
 * across all gateways) under a name of the upstream's own. `full` when either is reached: the call
 * skips that upstream. An upstream without limits asks nothing (null). A limiter that cannot be
 * reached lets the call through: the provider's own refusal is the worst that follows, never a
 * call refused for want of Redis.
 */
export async function takeCapacity(
  deps: GatewayDependencies,
  alias: string,
  target: UpstreamTarget,
  leaseId: string,
): Promise<Lease | null | 'full'> {
  const upstream = deps.catalog
    .alias(alias)
    ?.upstreams.find(
      (each) => each.providerId === target.providerId && each.upstreamModel === target.upstreamModel,
    );
  const concurrency = upstream?.maxConcurrency ?? null;
  const rate = upstream?.requestsPerMinute ?? null;
  if (concurrency === null && rate === null) return null;
  try {
    const decision = await deps.limiter.acquire({
      keyId: `upstream:${target.providerId}/${target.upstreamModel}`,
      keyRequestsPerMinute: rate ?? NO_RATE,
      keyConcurrency: concurrency,
      plan: null,
      leaseId,
    });
    return decision.allowed ? decision.lease : 'full';
  } catch (error) {
    deps.logger.warn(
      { err: error, providerId: target.providerId },
      'upstream capacity not checked: limiter unreachable',
    );
    return null;
  }
}
