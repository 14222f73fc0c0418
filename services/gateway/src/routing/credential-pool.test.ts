import type { GatewayProvider } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { createCredentialPools, pickCredential } from './credential-pool.ts';

const pooled: GatewayProvider = {
  id: 'up',
  kind: 'openai',
  baseUrl: 'https://up.example/v1',
  credentialRef: 'TOLLGATE_PROVIDER_A',
  credentialRefs: ['TOLLGATE_PROVIDER_A', 'TOLLGATE_PROVIDER_B', 'TOLLGATE_PROVIDER_C'],
};

describe('a provider credential pool', () => {
  it('takes its credentials in turn', () => {
    const pools = createCredentialPools({ recheckMs: 1_000 });
    const names = Array.from({ length: 6 }, () => pools.pick(pooled));
    expect(names).toEqual([
      'TOLLGATE_PROVIDER_A',
      'TOLLGATE_PROVIDER_B',
      'TOLLGATE_PROVIDER_C',
      'TOLLGATE_PROVIDER_A',
      'TOLLGATE_PROVIDER_B',
      'TOLLGATE_PROVIDER_C',
    ]);
  });

  it('a one-credential provider and one without: its name, or none', () => {
    const pools = createCredentialPools({ recheckMs: 1_000 });
    const single = { ...pooled, credentialRefs: undefined };
    expect(pools.pick(single)).toBe('TOLLGATE_PROVIDER_A');
    expect(pools.pick({ ...single, credentialRef: null })).toBeNull();
  });

  it('leaves a refused credential out until the recheck, reported once; an answer brings it back', () => {
    let now = 0;
    const pools = createCredentialPools({ recheckMs: 1_000, now: () => now });
    expect(pools.refused('up', 'TOLLGATE_PROVIDER_B', 401)).toBe(true);
    expect(pools.refused('up', 'TOLLGATE_PROVIDER_B', 401)).toBe(false);
    expect(pools.hasAnother(pooled, 'TOLLGATE_PROVIDER_B')).toBe(true);
    const names = new Set(Array.from({ length: 10 }, () => pools.pick(pooled)));
    expect(names).toEqual(new Set(['TOLLGATE_PROVIDER_A', 'TOLLGATE_PROVIDER_C']));
    expect(pools.refusals()).toEqual([
      {
        providerId: 'up',
        credential: 'TOLLGATE_PROVIDER_B',
        upstreamStatus: 401,
        refusedAt: new Date(0).toISOString(),
      },
    ]);
    now = 1_000;
    expect(new Set(Array.from({ length: 10 }, () => pools.pick(pooled)))).toContain('TOLLGATE_PROVIDER_B');
    // Still reported until it answers.
    expect(pools.refusals()).toHaveLength(1);
    expect(pools.accepted('up', 'TOLLGATE_PROVIDER_B')).toBe(true);
    expect(pools.refusals()).toEqual([]);
  });

  it('benches a rate-limited credential for its span, the others serving; not reported as refused', () => {
    let now = 0;
    const pools = createCredentialPools({ recheckMs: 60_000, now: () => now });
    expect(pools.benched('up', 'TOLLGATE_PROVIDER_A', 2_000)).toBe(true);
    expect(pools.benched('up', 'TOLLGATE_PROVIDER_A', 1_000)).toBe(false);
    expect(pools.hasAnother(pooled, 'TOLLGATE_PROVIDER_B')).toBe(true);
    expect(new Set(Array.from({ length: 10 }, () => pools.pick(pooled)))).toEqual(
      new Set(['TOLLGATE_PROVIDER_B', 'TOLLGATE_PROVIDER_C']),
    );
    expect(pools.refusals()).toEqual([]);
    pools.benched('up', 'TOLLGATE_PROVIDER_B', 2_000);
    expect(pools.hasAnother(pooled, 'TOLLGATE_PROVIDER_C')).toBe(false);
    // The longer span wins: still out at 1,999, back at 2,000.
    now = 1_999;
    expect(pools.hasAnother(pooled, 'TOLLGATE_PROVIDER_C')).toBe(false);
    now = 2_000;
    expect(new Set(Array.from({ length: 9 }, () => pools.pick(pooled))).size).toBe(3);
  });

  it('with every credential refused, tries them all again rather than none', () => {
    const pools = createCredentialPools({ recheckMs: 60_000 });
    for (const name of pooled.credentialRefs!) pools.refused('up', name, 403);
    expect(pools.hasAnother(pooled, 'TOLLGATE_PROVIDER_A')).toBe(false);
    expect(new Set(Array.from({ length: 3 }, () => pools.pick(pooled))).size).toBe(3);
  });

  it('pickCredential: the turn among the usable names', () => {
    const refused = (name: string) => name === 'b';
    expect([0, 1, 2, 3].map((turn) => pickCredential(['a', 'b', 'c'], refused, turn))).toEqual([
      'a',
      'c',
      'a',
      'c',
    ]);
    expect(pickCredential([], refused, 0)).toBeNull();
  });
});
