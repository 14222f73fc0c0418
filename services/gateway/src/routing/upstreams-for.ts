import type { GatewayAlias, MeteredSurface } from '@tollgate/schemas';
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

/**
 * The upstreams a reserved call may try, in order, at most `maxAttempts` (docs/routing.md).
 * `first` is where the reservation says the alias points: when the cached alias does not list it
 * (the catalogue changed since it was loaded), the call goes there alone. Only upstreams that
 * take the request as planned are listed: for a native call, a provider kind that speaks the
 * called surface; for a translated one, a kind of the same wire protocol (the request was checked
 * against that protocol before the reservation).
 */
export function upstreamsFor(
  deps: GatewayDependencies,
  call: {
    alias: GatewayAlias;
    first: UpstreamTarget;
    surface: MeteredSurface;
    translation: Translation | null;
    maxAttempts: number;
    /** Each upstream's standing (cooldowns, breakers, capacity); ready when not given. */
    standingOf?: (target: UpstreamTarget) => Standing;
    /** The upstream (upstreamKey) that served the conversation's previous turn, if known. */
    preferred?: string | null;
  },
): UpstreamTarget[] {
  const { alias, first } = call;
  const listed = alias.upstreams.some((upstream) => upstreamKey(upstream) === upstreamKey(first));
  if (!listed || alias.upstreams.length === 1) return [first];
  const fits = alias.upstreams.filter((upstream) => {
    if (upstreamKey(upstream) === upstreamKey(first)) return true;
    const provider = deps.catalog.provider(upstream.providerId);
    if (!provider) return false;
    const adapter = getAdapter(provider.kind, upstream.upstreamModel);
    return call.translation
      ? adapter.wireProtocol === call.translation.upstream
      : adapter.surfaces.includes(call.surface);
  });
  const standingOf = call.standingOf ?? (() => READY);
  return preferUpstream(orderUpstreams(fits, standingOf), call.preferred ?? null, standingOf)
    .slice(0, call.maxAttempts)
    .map(({ providerId, upstreamModel }) => ({ providerId, upstreamModel }));
}
