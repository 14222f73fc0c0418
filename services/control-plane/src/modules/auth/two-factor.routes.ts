import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { clientAddressOf, userAgentOf } from '../../http/client-address.ts';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireSession, type SessionEnv } from '../../http/session.ts';
import type { Actor } from '../audit/audit.service.ts';
import type { Mailer } from '../mail/mail.service.ts';
import { sendSecurityEmail } from '../notifications/notifications.service.ts';
import {
  Done,
  TwoFactorConfirmRequest,
  TwoFactorDisableRequest,
  TwoFactorEnrolment,
  TwoFactorEnrolRequest,
  TwoFactorRecoveryCodes,
  TwoFactorStatus,
} from './auth.schemas.ts';
import { beginEnrolment, confirmEnrolment, disableTwoFactor, twoFactorStatus } from './two-factor.service.ts';

const body = <T extends Parameters<typeof jsonContent>[0]>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

const statusRoute = createRoute({
  method: 'get',
  path: '/me/two-factor',
  tags: ['me'],
  summary: 'Whether two-factor sign-in is on, and how many recovery codes are left',
  security: SESSION,
  middleware: [requireSession()] as const,
  responses: {
    200: jsonContent(dataOf(TwoFactorStatus), 'Two-factor sign-in of the account.'),
    ...errorResponses(401, 403),
  },
});

const enrolRoute = createRoute({
  method: 'post',
  path: '/me/two-factor/enrol',
  tags: ['me'],
  summary: 'Start two-factor set-up: a new TOTP secret, returned this once (needs the password)',
  description:
    'The secret is stored encrypted and never returned again. Starting again replaces a set-up not yet confirmed; refused (forbidden) while two-factor sign-in is on.',
  security: SESSION_AND_CSRF,
  middleware: [requireSession()] as const,
  request: { body: body(TwoFactorEnrolRequest) },
  responses: {
    200: jsonContent(dataOf(TwoFactorEnrolment), 'Scan the QR code or type the secret, then confirm.'),
    ...errorResponses(401, 403, 422, 429),
  },
});

const confirmRoute = createRoute({
  method: 'post',
  path: '/me/two-factor/confirm',
  tags: ['me'],
  summary: 'Turn two-factor sign-in on with a first code; returns the recovery codes, once',
  security: SESSION_AND_CSRF,
  middleware: [requireSession()] as const,
  request: { body: body(TwoFactorConfirmRequest) },
  responses: {
    200: jsonContent(dataOf(TwoFactorRecoveryCodes), 'On. Keep the recovery codes.'),
    ...errorResponses(401, 403, 422, 429),
  },
});

const disableRoute = createRoute({
  method: 'post',
  path: '/me/two-factor/disable',
  tags: ['me'],
  summary: 'Turn two-factor sign-in off (needs the password and a code or recovery code)',
  security: SESSION_AND_CSRF,
  middleware: [requireSession()] as const,
  request: { body: body(TwoFactorDisableRequest) },
  responses: {
    200: jsonContent(dataOf(Done), 'Off; the secret and recovery codes are deleted.'),
    ...errorResponses(401, 403, 422, 429),
  },
});

function actorOf(c: Context<SessionEnv>): Actor {
  return {
    accountId: c.get('auth').account.id,
    ip: clientAddressOf(c, c.get('deps').config.trustProxy),
    userAgent: userAgentOf(c),
  };
}

/** Two-factor sign-in of the signed-in account (docs/security.md#two-factor-sign-in). */
export function twoFactorRoutes(mailer: Mailer) {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });

  app.openapi(statusRoute, async (c) => {
    return c.json({ data: await twoFactorStatus(c.get('deps'), c.get('auth').account.id) }, 200);
  });

  app.openapi(enrolRoute, async (c) => {
    const { account } = c.get('auth');
    const enrolment = await beginEnrolment(c.get('deps'), account, c.req.valid('json').password);
    return c.json({ data: enrolment }, 200);
  });

  app.openapi(confirmRoute, async (c) => {
    const codes = await confirmEnrolment(c.get('deps'), actorOf(c), c.req.valid('json').code);
    await sendSecurityEmail(c.get('deps'), mailer, c.get('auth').account.email, 'two_factor_enabled');
    return c.json({ data: codes }, 200);
  });

  app.openapi(disableRoute, async (c) => {
    await disableTwoFactor(c.get('deps'), actorOf(c), c.req.valid('json'));
    await sendSecurityEmail(c.get('deps'), mailer, c.get('auth').account.email, 'two_factor_disabled');
    return c.json({ data: { ok: true as const } }, 200);
  });

  return app;
}
