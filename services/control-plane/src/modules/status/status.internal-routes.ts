import { GatewayHeartbeat } from '@tollgate/schemas';
import { defineInternalRoute, type InternalRoute } from '../../http/internal-route.ts';
import { recordHeartbeat } from './status.service.ts';

/** The gateway's heartbeat (liveness, Redis reachability, upstream outcomes per provider). */
export function statusInternalRoutes(): InternalRoute[] {
  return [
    defineInternalRoute({
      method: 'POST',
      path: '/status/heartbeat',
      input: GatewayHeartbeat,
      handle: recordHeartbeat,
    }),
  ];
}
