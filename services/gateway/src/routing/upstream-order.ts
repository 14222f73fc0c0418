import type { GatewayUpstream } from '@tollgate/schemas';

/** Which upstream of an alias a call reached (admins see it; customers never do). */
export interface UpstreamTarget {
  providerId: string;
  upstreamModel: string;
}

export function upstreamKey(target: UpstreamTarget): string {
  return `${target.providerId}\u0000${target.upstreamModel}`;
}

/**
 * The order in which a call tries an alias's upstreams (docs/routing.md): priorities ascending;
 * within a priority, a weighted draw without replacement (an upstream of weight 3 comes first
 * three times as often as one of weight 1); upstreams cooling down after a failure go last, in
 * the same order, so that an alias whose upstreams all failed lately still tries them.
 */
export function orderUpstreams(
  upstreams: readonly GatewayUpstream[],
  isCooling: (upstream: GatewayUpstream) => boolean,
  random: () => number = Math.random,
): GatewayUpstream[] {
  const priorities = [...new Set(upstreams.map((upstream) => upstream.priority))].sort((a, b) => a - b);
  const ordered: GatewayUpstream[] = [];
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
  return [
    ...ordered.filter((upstream) => !isCooling(upstream)),
    ...ordered.filter((upstream) => isCooling(upstream)),
  ];
}
