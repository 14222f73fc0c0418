import { AppError } from '@tollgate/errors';
import { apiKeyDigest, type ResolvedKey } from '@tollgate/schemas';
import { addressGroupOf, clientAddressOf } from '@tollgate/service-kit';
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
  const key = await lookUp(deps, request, digest, options.fresh === true);
  if (key.state === 'revoked') throw new AppError('api_key_revoked');
  if (key.state === 'disabled') throw new AppError('api_key_disabled');
  if (key.state === 'expired' || (key.expiresAt !== null && Date.parse(key.expiresAt) <= Date.now())) {
    throw new AppError('api_key_expired');
  }
  if (key.accountSuspended) throw new AppError('account_suspended');
  return { digest, key };
}

/**
 * The key of a digest: from the cache, or asked of the control plane. A digest found unknown lately
 * is refused without asking; an address that sent too many unknown keys gets rate_limit_exceeded
 * for a digest that is not cached, until its window ends (keys.unknown).
 */
async function lookUp(
  deps: GatewayDependencies,
  request: InboundRequest,
  digest: string,
  fresh: boolean,
): Promise<ResolvedKey> {
  const guard = deps.unknownKeys;
  if (guard.isKnownUnknown(digest)) throw new AppError('invalid_api_key');
  const address = addressGroupOf(
    clientAddressOf(request.headers.get('x-forwarded-for'), request.peer, deps.config.trustProxy),
  );
  if (deps.keys.peek(digest) === null) {
    const seconds = guard.blockedFor(address);
    if (seconds > 0) {
      throw new AppError('rate_limit_exceeded', {
        message:
          'Too many unrecognised API keys from this address. Retry after the time given in Retry-After.',
        retryAfterSeconds: seconds,
      });
    }
  }
  try {
    return await (fresh ? deps.keys.fresh(digest) : deps.keys.get(digest));
  } catch (error) {
    if (error instanceof AppError && error.code === 'invalid_api_key') guard.recordUnknown(digest, address);
    throw error;
  }
}
