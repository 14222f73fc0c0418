/**
 * Names of the limiter's Redis keys for one call. Every key one script touches carries the same
 * hash tag (`{...}`), so on a Redis Cluster they share a slot and the script stays one atomic
 * step. The tag is the account's: a key and its account's packages always share it, whichever
 * package a call draws from, and different accounts spread over the nodes. Callers that name no
 * account (the gateway always does) get the package's tag, else the key's.
 */
export function limiterKeys(prefix: string, keyId: string, planId: string | undefined, accountId?: string) {
  const tag = accountId ? `{a:${accountId}}` : planId ? `{p:${planId}}` : `{k:${keyId}}`;
  return {
    keyRate: `${prefix}rl:${tag}:k:${keyId}:`,
    planRate: `${prefix}rl:${tag}:p:${planId ?? '-'}:`,
    keyLeases: `${prefix}cc:${tag}:k:${keyId}`,
    planLeases: `${prefix}cc:${tag}:p:${planId ?? '-'}`,
    tag,
  };
}
