import { z } from 'zod';

/**
 * Provider credentials live in one explicit namespace: every name a catalogue gives as a
 * provider's `credential` starts with this prefix (configurable as PROVIDER_SECRET_PREFIX on both
 * services). The gateway looks such a name up in SECRETS_FILE, then in its environment, and
 * nothing else, so no catalogue entry can make it send `HOME`, `GATEWAY_PORT` or one of its own
 * secrets to a provider's base URL.
 */
export const DEFAULT_PROVIDER_SECRET_PREFIX = 'TOLLGATE_PROVIDER_';

/** A usable prefix: an environment-variable name stem of at least 4 characters. */
export const ProviderSecretPrefix = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_]{3,63}$/, 'letters, digits and underscore, 4 to 64 characters');

const CREDENTIAL_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Why `name` is not a provider credential name under `prefix`, or null when it is one. */
export function providerCredentialProblem(name: string, prefix: string): string | null {
  if (!CREDENTIAL_NAME.test(name)) return 'must be a name of letters, digits and underscore';
  if (!name.startsWith(prefix) || name.length === prefix.length) {
    return `must start with ${prefix} (provider credentials come only from that namespace)`;
  }
  return null;
}
