import type { GatewayUpstream } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { orderUpstreams, READY, type Standing } from './upstream-order.ts';

const upstream = (upstreamModel: string, priority: number, weight: number): GatewayUpstream => ({
  providerId: 'p',
  upstreamModel,
  priority,
  weight,
});

/** A seeded generator, so the shares below are the same on every run. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

describe('orderUpstreams', () => {
  it('puts every upstream of a lower priority first', () => {
    const random = seeded(1);
    const list = [
      upstream('late', 2, 100),
      upstream('b', 0, 1),
      upstream('middle', 1, 50),
      upstream('a', 0, 1),
    ];
    for (let draw = 0; draw < 100; draw++) {
      const models = orderUpstreams(list, () => READY, random).map((each) => each.upstreamModel);
      expect(models.slice(2)).toEqual(['middle', 'late']);
      expect(models.slice(0, 2).sort()).toEqual(['a', 'b']);
    }
  });

  it('puts each upstream of a priority first in proportion to its weight (within 5 % over 10,000 calls)', () => {
    const random = seeded(7);
    const list = [upstream('three', 0, 3), upstream('one', 0, 1)];
    let first = 0;
    for (let call = 0; call < 10_000; call++) {
      if (orderUpstreams(list, () => READY, random)[0]?.upstreamModel === 'three') first++;
    }
    expect(first / 10_000).toBeGreaterThan(0.75 * 0.95);
    expect(first / 10_000).toBeLessThan(0.75 * 1.05);
  });

  it('moves cooling upstreams last, keeping them to try when every other failed', () => {
    const list = [upstream('main', 0, 1), upstream('backup', 1, 1)];
    const models = orderUpstreams(list, (each) =>
      each.upstreamModel === 'main' ? { kind: 'cooling' } : READY,
    ).map((each) => each.upstreamModel);
    expect(models).toEqual(['backup', 'main']);
  });

  it('leaves out upstreams out while another is ready or cooling; with none, the soonest back first', () => {
    const list = [upstream('open', 0, 1), upstream('cooling', 1, 1), upstream('benched', 2, 1)];
    const standings: Record<string, Standing> = {
      open: { kind: 'out', until: 5_000 },
      cooling: { kind: 'cooling' },
      benched: { kind: 'out', until: 2_000 },
    };
    const models = (of: Record<string, Standing>) =>
      orderUpstreams(list, (each) => of[each.upstreamModel]!).map((each) => each.upstreamModel);
    expect(models(standings)).toEqual(['cooling']);
    expect(models({ ...standings, cooling: { kind: 'out', until: 9_000 } })).toEqual([
      'benched',
      'open',
      'cooling',
    ]);
  });
});
