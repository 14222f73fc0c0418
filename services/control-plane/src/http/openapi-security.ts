import type { OpenAPIHono } from '@hono/zod-openapi';
import type { ControlPlaneConfig } from '../config.ts';
import { CSRF_HEADER, cookieNames } from './session.ts';

/** Security requirement of routes that read: the session cookie. */
export const SESSION = [{ sessionCookie: [] }];
/** Security requirement of routes that change state: the session cookie and the CSRF header. */
export const SESSION_AND_CSRF = [{ sessionCookie: [], csrfToken: [] }];

/** Security requirement of /reseller-management routes: a management key holding `scope`. */
export function managementKey(scope: string) {
  return [{ managementKey: [scope] }];
}

// biome-ignore lint/suspicious/noExplicitAny: any app's registry takes the same components
export function registerSecuritySchemes(app: OpenAPIHono<any>, config: ControlPlaneConfig): void {
  const names = cookieNames(config);
  app.openAPIRegistry.registerComponent('securitySchemes', 'sessionCookie', {
    type: 'apiKey',
    in: 'cookie',
    name: names.session,
    description:
      'Opaque session token set by POST /auth/login (HttpOnly, SameSite=Lax; Secure and __Host- behind TLS). ' +
      'Absent or unknown: unauthenticated (401). Ended or timed out: session_expired (401).',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'csrfToken', {
    type: 'apiKey',
    in: 'header',
    name: CSRF_HEADER,
    description:
      `The session's CSRF token, returned by POST /auth/login (csrfToken) and readable in the ${names.csrf} ` +
      'cookie. Required on every state-changing request of a session; missing or wrong: forbidden (403).',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'managementKey', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'mk-tg-...',
    description:
      'A reseller management key (created under /reseller/management-keys), accepted only under ' +
      '/reseller-management. Each route names the one scope it needs. Absent, unknown, revoked or ' +
      'expired: unauthenticated (401). Missing scope: forbidden (403). Rate limited per key ' +
      '(rate_limit_exceeded, 429, with Retry-After).',
  });
}
