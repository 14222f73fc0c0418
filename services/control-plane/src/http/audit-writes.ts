import type { MiddlewareHandler } from 'hono';
import { recordAudit } from '../modules/audit/audit.service.ts';
import { clientAddressOf, userAgentOf } from './client-address.ts';
import type { SessionEnv } from './session.ts';

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Audits the successful state-changing admin requests of modules that do not record their own
 * audit rows (catalogue edits, reservation resolutions): who, which route and record, from where.
 */
export function auditAdminWrites(action: string): MiddlewareHandler<SessionEnv> {
  return async (c, next) => {
    await next();
    const auth = c.get('auth');
    if (!STATE_CHANGING.has(c.req.method) || c.res.status >= 400 || !auth) return;
    const deps = c.get('deps');
    await recordAudit(
      deps.db,
      {
        accountId: auth.account.id,
        ip: clientAddressOf(c, deps.config.trustProxy),
        userAgent: userAgentOf(c),
      },
      {
        action,
        targetType: 'route',
        targetId: decodeURIComponent(c.req.path.split('/').filter(Boolean).slice(-2).join('/')),
        detail: { method: c.req.method, path: c.req.path, status: c.res.status },
      },
    );
  };
}
