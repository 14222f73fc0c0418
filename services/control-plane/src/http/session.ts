import { AppError } from '@tollgate/errors';
import type { Context, MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { ControlPlaneConfig } from '../config.ts';
import {
  type Authenticated,
  authenticateSession,
  csrfTokenMatches,
} from '../modules/auth/sessions.service.ts';
import type { AppEnv } from './env.ts';

/** Context of routes behind `requireSession`. */
export interface SessionEnv {
  Variables: AppEnv['Variables'] & { auth: Authenticated };
}

export const CSRF_HEADER = 'X-CSRF-Token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Cookie names. Behind TLS (PUBLIC_URL is https) both carry the `__Host-` prefix and Secure, so
 * no subdomain or plain-http page can set or read them.
 */
export function cookieNames(config: Pick<ControlPlaneConfig, 'publicUrl'>) {
  const secure = config.publicUrl?.startsWith('https:') ?? false;
  const prefix = secure ? '__Host-' : '';
  return { session: `${prefix}tollgate_session`, csrf: `${prefix}tollgate_csrf`, secure };
}

/**
 * Session in an HttpOnly cookie. The CSRF token goes in a second, readable cookie (and the login
 * body) so the page can echo it in X-CSRF-Token after a reload; the server keeps only its hash.
 */
export function setSessionCookies(
  c: Context,
  config: ControlPlaneConfig,
  tokens: { token: string; csrfToken: string },
): void {
  const names = cookieNames(config);
  const maxAge = Math.floor(config.sessions.absoluteTimeoutMs / 1000);
  const common = { path: '/', secure: names.secure, sameSite: 'Lax' as const, maxAge };
  setCookie(c, names.session, tokens.token, { ...common, httpOnly: true });
  setCookie(c, names.csrf, tokens.csrfToken, { ...common, httpOnly: false });
}

export function clearSessionCookies(c: Context, config: ControlPlaneConfig): void {
  const names = cookieNames(config);
  deleteCookie(c, names.session, { path: '/', secure: names.secure });
  deleteCookie(c, names.csrf, { path: '/', secure: names.secure });
}

/**
 * Requires a live session (unauthenticated / session_expired / account_suspended otherwise) and,
 * on state-changing methods, the session's CSRF token in X-CSRF-Token (forbidden otherwise).
 */
export function requireSession(): MiddlewareHandler<SessionEnv> {
  return async (c, next) => {
    const deps = c.get('deps');
    const auth = await authenticateSession(deps, getCookie(c, cookieNames(deps.config).session));
    if (!SAFE_METHODS.has(c.req.method) && !csrfTokenMatches(auth, c.req.header(CSRF_HEADER))) {
      throw new AppError('forbidden', { message: `Send the session's CSRF token in ${CSRF_HEADER}.` });
    }
    c.set('auth', auth);
    await next();
  };
}

/** After requireSession: the admin or reseller permission. */
export function requireRole(role: 'admin' | 'reseller'): MiddlewareHandler<SessionEnv> {
  return async (c, next) => {
    const { account } = c.get('auth');
    const allowed = role === 'admin' ? account.isAdmin : account.isReseller;
    if (!allowed) throw new AppError('forbidden');
    await next();
  };
}
