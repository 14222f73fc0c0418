import type { GatewayUpstream } from '@tollgate/schemas';

/** Which upstream of an alias a call reached (admins see it; customers never do). */
export interface UpstreamTarget {
  providerId: string;
  upstreamModel: string;
}

export function upstreamKey(target: UpstreamTarget): string {
  return `${target.providerId}\u0000${target.upstreamModel}`;
}

/** The provider id of an upstreamKey. */
export function providerOfKey(key: string): string {
  return key.slice(0, key.indexOf('\u0000'));
}

/**
 * Where an upstream stands for the next call (docs/routing.md): `probe` (its breaker's cool-down
 * ended and this call carries the one probe: tried first); `ready`; `cooling` (failed lately
 * in this process: tried after the ready ones); `out` (its breaker is open, the provider benched it
 * with Retry-After, or it is at its own capacity: not tried while any other upstream is ready or
 * cooling). `until` orders the out ones: the soonest back first.
 */
export type Standing =
  | { kind: 'probe' }
  | { kind: 'ready' }
  | { kind: 'cooling' }
  | { kind: 'out'; until: number };

export const READY: Standing = { kind: 'ready' };

/**
 * The order in which a call tries an alias's upstreams, from each one's standing; pure, so the
 * routing rules are tested without a clock or Redis. Priorities ascending; within a priority, a
 * weighted draw without replacement (an upstream of weight 3 comes first three times as often as
 * one of weight 1); cooling upstreams after the ready ones, in the same order. Out upstreams only
 * when nothing else is left (the soonest back first): the breaker never turns a call that an
 * upstream might answer into a refusal.
 */
export function orderUpstreams<U extends GatewayUpstream>(
  upstreams: readonly U[],
  standingOf: (upstream: U) => Standing,
  random: () => number = Math.random,
): U[] {
  const priorities = [...new Set(upstreams.map((upstream) => upstream.priority))].sort((a, b) => a - b);
  const ordered: U[] = [];
  for (const priority of priorities) {
    const tier = upstreams.filter((upstream) => upstream.priority === priority);
    while (tier.length > 0) {
      const total = tier.reduce((sum, upstream) => sum + upstream.weight, 0);
      let draw = random() * total;
      let index = 0;
      while (index < tier.length - 1 && draw >= tier[index]!.weight) {
        draw -= tier[index]!.weight;
        index++;
      }
      ordered.push(...tier.splice(index, 1));
    }
  }
  const standings = new Map(ordered.map((upstream) => [upstream, standingOf(upstream)]));
  // Every upstream ready (healthy routing): the draw is the order.
  if (ordered.every((upstream) => standings.get(upstream)!.kind === 'ready')) return ordered;
  const of = (kind: Standing['kind']) => ordered.filter((upstream) => standings.get(upstream)!.kind === kind);
  const usable = [...of('probe'), ...of('ready'), ...of('cooling')];
  if (usable.length > 0) return usable;
  const until = (upstream: U) => {
    const standing = standings.get(upstream)!;
    return standing.kind === 'out' ? standing.until : 0;
  };
  // A stable sort: equal instants keep the priority and weight order.
  return of('out').sort((a, b) => until(a) - until(b));
}

/**
 * Prompt-cache affinity (docs/routing.md): the upstream that served the conversation's previous
 * turn goes first, whatever its priority or weight, while it is listed and ready (not cooling,
 * not out); the others keep their order. Pure, like orderUpstreams.
 */
export function preferUpstream<T extends UpstreamTarget>(
  ordered: readonly T[],
  preferred: string | null,
  standingOf: (upstream: T) => Standing,
): T[] {
  if (preferred === null) return [...ordered];
  const index = ordered.findIndex((upstream) => upstreamKey(upstream) === preferred);
  if (index <= 0 || standingOf(ordered[index]!).kind !== 'ready') return [...ordered];
  return [ordered[index]!, ...ordered.slice(0, index), ...ordered.slice(index + 1)];
}
