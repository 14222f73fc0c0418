import type { ResolvedKey } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { createKeyCache } from './key-cache.ts';

function resolvedKey(keyId: string, accountId: string): ResolvedKey {
  return {
    keyId,
    accountId,
    state: 'active',
    accountSuspended: false,
    expiresAt: null,
    scope: null,
    limits: { maxRequestBytes: 1_000_000, maxOutputTokens: 4_096, requestsPerMinute: 60, concurrency: 4 },
    plans: [],
  };
}

/** A cache whose lookups wait until the test answers them, so events can land in between. */
function cacheWithPendingLookups() {
  const pending = new Map<string, (key: ResolvedKey) => void>();
  let lookups = 0;
  const cache = createKeyCache(
    (digest) => {
      lookups += 1;
      return new Promise<ResolvedKey>((resolve) => pending.set(digest, resolve));
    },
    { ttlMs: 60_000, maxEntries: 100 },
  );
  return {
    cache,
    lookups: () => lookups,
    answer(digest: string, key: ResolvedKey) {
      pending.get(digest)!(key);
      pending.delete(digest);
    },
  };
}

describe('key cache', () => {
  it('caches a lookup, and shares one lookup among requests for the same digest', async () => {
    const { cache, lookups, answer } = cacheWithPendingLookups();
    const first = cache.get('d1');
    const second = cache.get('d1');
    expect(lookups()).toBe(1);
    answer('d1', resolvedKey('k1', 'a1'));
    expect(await first).toEqual(await second);
    expect(cache.peek('d1')?.keyId).toBe('k1');
    expect(cache.get('d1')).toMatchObject({ keyId: 'k1' });
    expect(lookups()).toBe(1);
  });

  it('still caches a lookup when an event about another key or account lands while it is asked', async () => {
    const { cache, answer } = cacheWithPendingLookups();
    const lookup = cache.get('d1');
    cache.dropKey('k2');
    cache.dropAccount('a2');
    answer('d1', resolvedKey('k1', 'a1'));
    await lookup;
    expect(cache.peek('d1')?.keyId).toBe('k1');
  });

  it('does not cache an answer that an event about its key, its account or everything may have outdated', async () => {
    const { cache, answer } = cacheWithPendingLookups();
    const events = [() => cache.dropKey('k1'), () => cache.dropAccount('a1'), () => cache.clear()];
    for (const [index, event] of events.entries()) {
      const digest = `d${index}`;
      const lookup = cache.get(digest);
      event();
      answer(digest, resolvedKey('k1', 'a1'));
      expect((await lookup).keyId).toBe('k1');
      expect(cache.peek(digest), `event ${index}`).toBeNull();
    }
  });

  it('an event before the lookup began does not stop the lookup being cached', async () => {
    const { cache, answer } = cacheWithPendingLookups();
    const earlier = cache.get('d0');
    cache.dropKey('k1');
    // This lookup starts after the event: what it reads is already the changed key.
    const later = cache.get('d1');
    answer('d0', resolvedKey('k1', 'a1'));
    answer('d1', resolvedKey('k1', 'a1'));
    await Promise.all([earlier, later]);
    expect(cache.peek('d0')).toBeNull();
    expect(cache.peek('d1')?.keyId).toBe('k1');
  });

  it('drops cached entries at once on their key or account event', async () => {
    const { cache, answer } = cacheWithPendingLookups();
    for (const [digest, keyId] of [
      ['d1', 'k1'],
      ['d2', 'k2'],
      ['d3', 'k3'],
    ] as const) {
      const lookup = cache.get(digest);
      answer(digest, resolvedKey(keyId, keyId === 'k3' ? 'a3' : 'a1'));
      await lookup;
    }
    cache.dropKey('k1');
    expect([cache.peek('d1'), cache.peek('d2')?.keyId, cache.peek('d3')?.keyId]).toEqual([null, 'k2', 'k3']);
    cache.dropAccount('a1');
    expect([cache.peek('d2'), cache.peek('d3')?.keyId]).toEqual([null, 'k3']);
  });
});
