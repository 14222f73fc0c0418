import { createHash } from 'node:crypto';
import type { ReasoningProof } from './ir.ts';

/**
 * Reasoning proofs (Anthropic thinking signatures and redacted thinking, OpenAI encrypted
 * reasoning) are opaque tokens only their issuer can check. The gateway never invents one, and
 * never sends one to a provider other than the one that issued it (a foreign signature is refused
 * by the provider, and would hand one provider's data to another). This file is the one place
 * that rule lives; routing between upstreams calls `mayReplay` too.
 *
 * A proof handed to a caller through translation is sealed with its issuer's tag:
 * `tgr1.<tag>.<kind>.<item id>.<value>`. The tag is a hash of the provider's catalogue id (it
 * names no provider). A proof the caller sends back is opened again; one without our seal came
 * from a native call (the gateway cannot tell which provider issued it), so translation never
 * replays it.
 */
const SEAL = 'tgr1';
const KINDS = { signature: 's', redacted: 'r', encrypted: 'e' } as const;
const KIND_OF: Record<string, ReasoningProof['kind']> = { s: 'signature', r: 'redacted', e: 'encrypted' };

/** Origin of proofs whose issuer is unknown (not sealed by this gateway). */
export const UNKNOWN_ORIGIN = 'unknown';

/** A provider's tag: stable, short, and not its id. */
export function providerTag(providerId: string): string {
  return createHash('sha256').update(`tollgate-provider:${providerId}`).digest('hex').slice(0, 12);
}

export function sealProof(proof: ReasoningProof): string {
  return `${SEAL}.${proof.origin}.${KINDS[proof.kind]}.${proof.itemId ?? ''}.${proof.value}`;
}

/** Opens a sealed proof; anything else is a proof of unknown origin of the given kind. */
export function openProof(text: string, kindIfUnsealed: ReasoningProof['kind']): ReasoningProof {
  if (text.startsWith(`${SEAL}.`)) {
    const parts = text.split('.');
    const kind = KIND_OF[parts[2] ?? ''];
    if (parts.length >= 5 && kind && parts[1]) {
      const value = parts.slice(4).join('.');
      return { origin: parts[1], kind, value, ...(parts[3] ? { itemId: parts[3] } : {}) };
    }
  }
  return { origin: UNKNOWN_ORIGIN, kind: kindIfUnsealed, value: text };
}

/** The rule: a proof goes back only to the provider that issued it. */
export function mayReplay(proof: ReasoningProof, targetTag: string): boolean {
  return proof.origin !== UNKNOWN_ORIGIN && proof.origin === targetTag;
}
