import { ResolveKeyRequest } from '@tollgate/schemas';
import { defineInternalRoute, type InternalRoute } from '../../http/internal-route.ts';
import { readKeyStatusForGateway, resolveKeyForGateway } from './gateway-keys.service.ts';

/** Key resolution for the gateway (paths under /internal/v1). */
export function apiKeysInternalRoutes(): InternalRoute[] {
  return [
    defineInternalRoute({
      method: 'POST',
      path: '/keys/resolve',
      input: ResolveKeyRequest,
      handle: (deps, input) => resolveKeyForGateway(deps, input.keyDigest),
    }),
    defineInternalRoute({
      method: 'POST',
      path: '/keys/status',
      input: ResolveKeyRequest,
      handle: (deps, input) => readKeyStatusForGateway(deps, input.keyDigest),
    }),
  ];
}
