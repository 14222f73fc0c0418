import type { GatewayProvider } from '@tollgate/schemas';

/** A credential the provider refused, as logged, counted and reported (its name, never its value). */
export interface CredentialRefusal {
  providerId: string;
  /** The credential's name (an environment variable or secrets-file entry). */
  credential: string;
  /** The provider's status (401, 403, 407, or another its adapter recognised as a refusal). */
  upstreamStatus: number | null;
  refusedAt: string;
}

/** A provider's credential names: its pool, or its one credential (empty when it needs none). */
export function credentialNamesOf(provider: GatewayProvider): string[] {
  if (provider.credentialRefs && provider.credentialRefs.length > 0) return provider.credentialRefs;
  return provider.credentialRef === null ? [] : [provider.credentialRef];
}

/**
 * The credential of a pool the next call uses: the one after `turn`'s, among those not refused;
 * every one is a candidate again when all were refused (the operator may have fixed one, and the
 * call fails the same way otherwise). Pure: the caller keeps the turn.
 */
export function pickCredential(
  names: readonly string[],
  isRefused: (name: string) => boolean,
  turn: number,
): string | null {
  if (names.length === 0) return null;
  const usable = names.filter((name) => !isRefused(name));
  const from = usable.length > 0 ? usable : names;
  return from[turn % from.length]!;
}

/**
 * Each provider's credential pool: calls take its credentials in turn; a credential the provider
 * refused (401/403) leaves the rotation for `recheckMs`, after which calls try it again (its first
 * success brings it back at once, another refusal takes it out again); one it rate-limited (429)
 * is benched for the provider's Retry-After, the others serving meanwhile. Kept per gateway
 * process: each gateway finds a refused or rate-limited credential once (docs/routing.md).
 */
export function createCredentialPools(options: { recheckMs: number; now?: () => number }) {
  const now = options.now ?? Date.now;
  const turns = new Map<string, number>();
  const refused = new Map<string, { until: number; refusal: CredentialRefusal }>();
  /** Credentials benched by a 429, until an instant. */
  const benched = new Map<string, number>();
  const keyOf = (providerId: string, name: string) => `${providerId}\u0000${name}`;

  function isBenched(providerId: string, name: string): boolean {
    if (benched.size === 0) return false;
    const key = keyOf(providerId, name);
    const until = benched.get(key);
    if (until === undefined) return false;
    if (until > now()) return true;
    benched.delete(key);
    return false;
  }

  function isRefused(providerId: string, name: string): boolean {
    if (refused.size === 0) return false;
    const entry = refused.get(keyOf(providerId, name));
    return entry !== undefined && entry.until > now();
  }

  /** Out of rotation: refused (until its recheck) or benched (until its Retry-After ends). */
  const isOut = (providerId: string, name: string) =>
    isRefused(providerId, name) || isBenched(providerId, name);

  return {
    /** The credential name the next call to this provider sends; null when it needs none. */
    pick(provider: GatewayProvider): string | null {
      // Every call asks: a provider with one credential (the common case) allocates nothing.
      if (!provider.credentialRefs || provider.credentialRefs.length <= 1)
        return provider.credentialRefs?.[0] ?? provider.credentialRef;
      const names = credentialNamesOf(provider);
      if (names.length <= 1) return names[0] ?? null;
      const turn = turns.get(provider.id) ?? 0;
      turns.set(provider.id, turn + 1);
      return pickCredential(names, (name) => isOut(provider.id, name), turn);
    },
    /** Another credential of the pool that is neither refused nor benched (the call may try it at once). */
    hasAnother(provider: GatewayProvider, name: string): boolean {
      return credentialNamesOf(provider).some((other) => other !== name && !isOut(provider.id, other));
    },
    /** The provider refused this credential; true when it was in rotation until now. */
    refused(providerId: string, name: string, upstreamStatus: number | null): boolean {
      const fresh = !isRefused(providerId, name);
      const kept = refused.get(keyOf(providerId, name));
      refused.set(keyOf(providerId, name), {
        until: now() + options.recheckMs,
        refusal:
          fresh || !kept
            ? { providerId, credential: name, upstreamStatus, refusedAt: new Date(now()).toISOString() }
            : kept.refusal,
      });
      return fresh;
    },
    /**
     * The provider rate-limited this credential (a 429): out of rotation for `forMs`, the others
     * of its pool serving meanwhile. True when it was in rotation until now.
     */
    benched(providerId: string, name: string, forMs: number): boolean {
      const fresh = !isOut(providerId, name);
      const key = keyOf(providerId, name);
      benched.set(key, Math.max(benched.get(key) ?? 0, now() + forMs));
      return fresh;
    },
    /** The provider answered with this credential; true when it had been refused. */
    accepted(providerId: string, name: string): boolean {
      return refused.size > 0 && refused.delete(keyOf(providerId, name));
    },
    /** Credentials out of rotation now (rechecked ones included until they answer). */
    refusals(): CredentialRefusal[] {
      return [...refused.values()].map((entry) => entry.refusal);
    },
  };
}

export type CredentialPools = ReturnType<typeof createCredentialPools>;
