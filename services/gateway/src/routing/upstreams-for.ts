import type { GatewayAlias, GatewayUpstream, MeteredSurface } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import type { Translation } from '../translation/translate.ts';
import { getAdapter } from '../upstream/index.ts';
import {
  orderUpstreams,
  preferUpstream,
  READY,
  type Standing,
  type UpstreamTarget,
  upstreamKey,
} from './upstream-order.ts';

export interface RoutedCall {
  alias: GatewayAlias;
  first: UpstreamTarget;
  surface: MeteredSurface;
  translation: Translation | null;
}

/**
 * The upstreams a reserved call may try, in no order (docs/routing.md). `first` is where the
 * reservation says the alias points: when the cached alias does not list it (the catalogue
 * changed since it was loaded), the call goes there alone. Only upstreams that take the request
 * as planned are listed: for a native call, a provider kind that speaks the called surface; for a
 * translated one, a kind of the same wire protocol (the request was checked against that protocol
 * before the reservation).
 */
export function candidatesFor(deps: GatewayDependencies, call: RoutedCall): GatewayUpstream[] {
  const { alias, first } = call;
  const listed = alias.upstreams.find((upstream) => upstreamKey(upstream) === upstreamKey(first));
  if (!listed) return [{ ...first, priority: 0, weight: 1 }];
  if (alias.upstreams.length === 1) return [listed];
  return alias.upstreams.filter((upstream) => {
    if (upstream === listed) return true;
    const provider = deps.catalog.provider(upstream.providerId);
    if (!provider) return false;
    const adapter = getAdapter(provider.kind, upstream.upstreamModel);
    return call.translation
      ? adapter.wireProtocol === call.translation.upstream
      : adapter.surfaces.includes(call.surface);
  });
}

/**
 * The candidates in the order the call tries them (forwardToUpstream tries at most
 * ROUTING_MAX_ATTEMPTS, skipping those at their capacity). A lone candidate is
 * tried whatever its standing: with nothing to move to, a breaker would only turn a call the
 * upstream may answer into a refusal.
 */
export function upstreamsFor(
  candidates: readonly GatewayUpstream[],
  call: {
    /** Each upstream's standing (cooldowns, breakers, capacity); ready when not given. */
    standingOf?: (target: UpstreamTarget) => Standing;
    /** The upstream (upstreamKey) that served the conversation's previous turn, if known. */
    preferred?: string | null;
  },
): UpstreamTarget[] {
  const standingOf = call.standingOf ?? (() => READY);
  const ordered =
    candidates.length === 1
      ? candidates
      : preferUpstream(orderUpstreams(candidates, standingOf), call.preferred ?? null, standingOf);
  return ordered.map(({ providerId, upstreamModel }) => ({ providerId, upstreamModel }));
}
