import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { clientAddressOf, userAgentOf } from '../../http/client-address.ts';
import type { AppEnv } from '../../http/env.ts';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import {
  clearSessionCookies,
  requireSession,
  type SessionEnv,
  setSessionCookies,
} from '../../http/session.ts';
import { AccountView, toAccountView } from '../accounts/accounts.schemas.ts';
import type { Mailer } from '../mail/mail.service.ts';
import { sendSecurityEmail } from '../notifications/notifications.service.ts';
import {
  Done,
  ForgotPasswordRequest,
  LoginRequest,
  LoginResult,
  RegisterCodeRequest,
  RegisterCodeSent,
  RegisterRequest,
  ResetPasswordRequest,
  toSessionView,
} from './auth.schemas.ts';
import { logIn } from './login.service.ts';
import { requestPasswordReset, resetPassword } from './password-reset.service.ts';
import { register, requestRegisterCode } from './registration.service.ts';
import { endCurrentSession } from './sessions.service.ts';

const jsonBody = <T extends Parameters<typeof jsonContent>[0]>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

const registerCodeRoute = createRoute({
  method: 'post',
  path: '/auth/register/code',
  tags: ['auth'],
  summary: 'Send a sign-up verification code by email',
  description:
    'Answers alike whether or not the address has an account. Throttled per address and per recipient.',
  request: { body: jsonBody(RegisterCodeRequest) },
  responses: {
    202: jsonContent(dataOf(RegisterCodeSent), 'The email is on its way.'),
    ...errorResponses(422, 429),
  },
});

const registerRoute = createRoute({
  method: 'post',
  path: '/auth/register',
  tags: ['auth'],
  summary: 'Consume the sign-up code and create the account',
  request: { body: jsonBody(RegisterRequest) },
  responses: {
    201: jsonContent(dataOf(AccountView), 'The account was created; sign in next.'),
    ...errorResponses(422, 429),
  },
});

const loginRoute = createRoute({
  method: 'post',
  path: '/auth/login',
  tags: ['auth'],
  summary: 'Sign in',
  description:
    'Sets the session cookie (HttpOnly) and a readable CSRF cookie, and returns the CSRF token. ' +
    'Wrong password and unknown email answer alike (unauthenticated). Throttled per address, per ' +
    'account and address, and per account (addresses that signed in to the account before are exempt).',
  request: { body: jsonBody(LoginRequest) },
  responses: {
    200: jsonContent(dataOf(LoginResult), 'Signed in.'),
    ...errorResponses(401, 403, 422, 429),
  },
});

const logoutRoute = createRoute({
  method: 'post',
  path: '/auth/logout',
  tags: ['auth'],
  summary: 'Sign out (ends this session)',
  security: SESSION_AND_CSRF,
  middleware: [requireSession()] as const,
  responses: {
    200: jsonContent(dataOf(Done), 'Signed out; cookies cleared.'),
    ...errorResponses(401, 403),
  },
});

const forgotRoute = createRoute({
  method: 'post',
  path: '/auth/forgot-password',
  tags: ['auth'],
  summary: 'Email a single-use password-reset token',
  description: 'Answers alike whether or not the address has an account.',
  request: { body: jsonBody(ForgotPasswordRequest) },
  responses: {
    202: jsonContent(
      dataOf(Done),
      'An email is on its way: a reset token if the address has an account, a notice if not.',
    ),
    ...errorResponses(422, 429),
  },
});

const resetRoute = createRoute({
  method: 'post',
  path: '/auth/reset-password',
  tags: ['auth'],
  summary: 'Set a new password with a reset token; ends every session of the account',
  request: { body: jsonBody(ResetPasswordRequest) },
  responses: {
    200: jsonContent(dataOf(Done), 'Password changed; sign in again.'),
    ...errorResponses(422, 429),
  },
});

/**
 * Sign-up, sign-in, sign-out and password reset. Bodies must be application/json: a cross-site
 * form cannot send that without a CORS preflight, which covers CSRF on the routes without a session.
 */
export function authRoutes(mailer: Mailer) {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

  app.openapi(registerCodeRoute, async (c) => {
    const deps = c.get('deps');
    const sent = await requestRegisterCode(
      deps,
      mailer,
      c.req.valid('json'),
      clientAddressOf(c, deps.config.trustProxy),
    );
    return c.json({ data: { sent: true as const, expiresInSeconds: sent.expiresInSeconds } }, 202);
  });

  app.openapi(registerRoute, async (c) => {
    const deps = c.get('deps');
    const account = await register(deps, c.req.valid('json'), clientAddressOf(c, deps.config.trustProxy));
    return c.json({ data: toAccountView(account) }, 201);
  });

  app.openapi(loginRoute, async (c) => {
    const deps = c.get('deps');
    const client = { ip: clientAddressOf(c, deps.config.trustProxy), userAgent: userAgentOf(c) };
    const { account, started } = await logIn(deps, c.req.valid('json'), client);
    setSessionCookies(c, deps.config, started);
    const session = toSessionView(started.session, started.session.id);
    return c.json({ data: { account: toAccountView(account), session, csrfToken: started.csrfToken } }, 200);
  });

  app.openapi(forgotRoute, async (c) => {
    const deps = c.get('deps');
    await requestPasswordReset(deps, mailer, c.req.valid('json'), clientAddressOf(c, deps.config.trustProxy));
    return c.json({ data: { ok: true as const } }, 202);
  });

  app.openapi(resetRoute, async (c) => {
    const deps = c.get('deps');
    const { email } = await resetPassword(
      deps,
      c.req.valid('json'),
      clientAddressOf(c, deps.config.trustProxy),
    );
    await sendSecurityEmail(deps, mailer, email, 'password_changed');
    return c.json({ data: { ok: true as const } }, 200);
  });

  const sessionApp = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  sessionApp.openapi(logoutRoute, async (c) => {
    const deps = c.get('deps');
    await endCurrentSession(deps, c.get('auth'));
    clearSessionCookies(c, deps.config);
    return c.json({ data: { ok: true as const } }, 200);
  });
  app.route('/', sessionApp);

  return app;
}
