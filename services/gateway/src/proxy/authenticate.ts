import { AppError } from '@tollgate/errors';
import { apiKeyDigest, type ResolvedKey } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import type { InboundRequest } from '../request/inbound.ts';
import { readApiKey } from './credentials.ts';

export interface Authenticated {
  digest: string;
  key: ResolvedKey;
}

/**
 * Reads and checks the request's key: state, expiry and account. Metered calls use the (briefly)
 * cached record, since the reservation checks the key again; `fresh` asks the control plane, for
 * the calls with no reservation, so that a revoked, disabled or rotated key fails on the next one.
 */
export async function authenticate(
  deps: GatewayDependencies,
  request: InboundRequest,
  options: { fresh?: boolean } = {},
): Promise<Authenticated> {
  const digest = apiKeyDigest(readApiKey(request.headers, request.url));
  const key = await (options.fresh ? deps.keys.fresh(digest) : deps.keys.get(digest));
  if (key.state === 'revoked') throw new AppError('api_key_revoked');
  if (key.state === 'disabled') throw new AppError('api_key_disabled');
  if (key.state === 'expired' || (key.expiresAt !== null && Date.parse(key.expiresAt) <= Date.now())) {
    throw new AppError('api_key_expired');
  }
  if (key.accountSuspended) throw new AppError('account_suspended');
  return { digest, key };
}
