import { AppError } from '@tollgate/errors';
import type { ManagementScope } from '@tollgate/schemas';
import type { Context, MiddlewareHandler } from 'hono';
import type { Actor } from '../modules/audit/audit.service.ts';
import {
  authenticateManagementKey,
  type ManagementPrincipal,
} from '../modules/management-keys/management-keys.service.ts';
import { clientAddressOf, userAgentOf } from './client-address.ts';
import type { AppEnv } from './env.ts';
import type { SessionEnv } from './session.ts';

/** Context of routes behind `requireManagementKey`. */
export interface ManagementEnv {
  Variables: AppEnv['Variables'] & { management: ManagementPrincipal };
}

/** A management key credential anywhere in a header value. */
const MANAGEMENT_KEY = /(?:^|[^A-Za-z0-9_-])mk-tg-[A-Za-z0-9]{8,}/;

/** The one area a management key may open. */
export const MANAGEMENT_AREA = '/api/v1/reseller-management';

/**
 * Management keys are never accepted outside /reseller-management: a request elsewhere that
 * carries one in any header is refused as unauthenticated, whatever else it carries.
 */
export function refuseManagementKeysOutsideTheirArea(): MiddlewareHandler {
  return async (c, next) => {
    const inArea = c.req.path === MANAGEMENT_AREA || c.req.path.startsWith(`${MANAGEMENT_AREA}/`);
    if (!inArea) {
      for (const value of c.req.raw.headers.values()) {
        if (MANAGEMENT_KEY.test(value))
          throw new AppError('unauthenticated', {
            message: 'Management keys are accepted only under /api/v1/reseller-management.',
          });
      }
    }
    await next();
  };
}

/** Requires a live management key holding `scope` (see authenticateManagementKey). */
export function requireManagementKey(scope: ManagementScope): MiddlewareHandler<ManagementEnv> {
  return async (c, next) => {
    const principal = await authenticateManagementKey(c.get('deps'), c.req.header('authorization'), scope);
    c.set('management', principal);
    await next();
  };
}

/** The audit actor of a reseller-management request. */
export function managementActor(c: Context<ManagementEnv>): Actor {
  const principal = c.get('management');
  return {
    accountId: principal.resellerId,
    managementKeyId: principal.keyId,
    ip: clientAddressOf(c, c.get('deps').config.trustProxy),
    userAgent: userAgentOf(c),
  };
}

/** The audit actor of a signed-in request. */
export function sessionActor(c: Context<SessionEnv>): Actor {
  return {
    accountId: c.get('auth').account.id,
    ip: clientAddressOf(c, c.get('deps').config.trustProxy),
    userAgent: userAgentOf(c),
  };
}
