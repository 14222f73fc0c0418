/**
 * Names of the limiter's Redis keys for one call. Every key one script touches carries the same
 * hash tag (`{...}`), so on a Redis Cluster they share a slot and the script stays one atomic
 * step. The tag is the package's (account + package) when the call draws from one, else the key's:
 * a key's counters live with its package's, and all keys of one account's package share a node.
 */
export function limiterKeys(prefix: string, keyId: string, planId: string | undefined) {
  const tag = planId ? `{p:${planId}}` : `{k:${keyId}}`;
  return {
    keyRate: `${prefix}rl:${tag}:k:${keyId}:`,
    planRate: `${prefix}rl:${tag}:p:${planId ?? '-'}:`,
    keyLeases: `${prefix}cc:${tag}:k:${keyId}`,
    planLeases: `${prefix}cc:${tag}:p:${planId ?? '-'}`,
    tag,
  };
}
