import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { clientAddressOf, userAgentOf } from '../../http/client-address.ts';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireSession, type SessionEnv } from '../../http/session.ts';
import type { Mailer } from '../mail/mail.service.ts';
import { sendSecurityEmail } from '../notifications/notifications.service.ts';
import { ChangePasswordRequest, SessionView, toSessionView } from './auth.schemas.ts';
import { changePassword } from './login.service.ts';
import { endOwnSession, listOpenSessions } from './sessions.service.ts';

const SessionIdParam = z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' } }) });
const PasswordChanged = z.object({ endedSessions: z.number().int() }).openapi('PasswordChanged');

const changePasswordRoute = createRoute({
  method: 'post',
  path: '/me/password',
  tags: ['me'],
  summary: 'Change the password (needs the current one); ends every other session',
  security: SESSION_AND_CSRF,
  middleware: [requireSession()] as const,
  request: { body: { required: true, content: { 'application/json': { schema: ChangePasswordRequest } } } },
  responses: {
    200: jsonContent(dataOf(PasswordChanged), 'Password changed.'),
    ...errorResponses(401, 403, 422, 429),
  },
});

const listSessionsRoute = createRoute({
  method: 'get',
  path: '/me/sessions',
  tags: ['me'],
  summary: 'List the open sessions of the account',
  security: SESSION,
  middleware: [requireSession()] as const,
  responses: {
    200: jsonContent(dataOf(z.array(SessionView)), 'Open sessions.'),
    ...errorResponses(401, 403),
  },
});

const endSessionRoute = createRoute({
  method: 'delete',
  path: '/me/sessions/{id}',
  tags: ['me'],
  summary: 'End one of your sessions',
  description: "A session that is not the caller's own (or no longer open) is not_found.",
  security: SESSION_AND_CSRF,
  middleware: [requireSession()] as const,
  request: { params: SessionIdParam },
  responses: {
    200: jsonContent(dataOf(z.object({ id: z.string(), ended: z.literal(true) })), 'Ended.'),
    ...errorResponses(401, 403, 404),
  },
});

export function sessionRoutes(mailer: Mailer) {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });

  app.openapi(changePasswordRoute, async (c) => {
    const deps = c.get('deps');
    const client = { ip: clientAddressOf(c, deps.config.trustProxy), userAgent: userAgentOf(c) };
    const result = await changePassword(deps, c.get('auth'), c.req.valid('json'), client);
    await sendSecurityEmail(deps, mailer, c.get('auth').account.email, 'password_changed');
    return c.json({ data: result }, 200);
  });

  app.openapi(listSessionsRoute, async (c) => {
    const auth = c.get('auth');
    const sessions = await listOpenSessions(c.get('deps'), auth.account.id);
    return c.json({ data: sessions.map((session) => toSessionView(session, auth.session.id)) }, 200);
  });

  app.openapi(endSessionRoute, async (c) => {
    const { id } = c.req.valid('param');
    await endOwnSession(c.get('deps'), c.get('auth').account.id, id);
    return c.json({ data: { id, ended: true as const } }, 200);
  });

  return app;
}
