import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireSession, type SessionEnv } from '../../http/session.ts';
import { changeEmailSettings, emailSettingsOf } from './notifications.service.ts';

const EmailSettings = z
  .object({
    securityEmails: z
      .literal(true)
      .describe('Password changed, two-factor sign-in turned on or off: always sent, cannot be turned off.'),
    purchaseEmails: z.boolean().describe('A receipt by email for each paid order.'),
    lowBalanceEmails: z
      .boolean()
      .describe('One email when the credit balance falls below the operator’s threshold.'),
  })
  .openapi('EmailSettings');

const EmailSettingsChange = z
  .object({ purchaseEmails: z.boolean().optional(), lowBalanceEmails: z.boolean().optional() })
  .strict()
  .openapi('EmailSettingsChange');

const readRoute = createRoute({
  method: 'get',
  path: '/me/email-settings',
  tags: ['me'],
  summary: 'Which emails the account gets',
  security: SESSION,
  middleware: [requireSession()] as const,
  responses: {
    200: jsonContent(dataOf(EmailSettings), 'The email settings.'),
    ...errorResponses(401, 403),
  },
});

const changeRoute = createRoute({
  method: 'patch',
  path: '/me/email-settings',
  tags: ['me'],
  summary: 'Turn billing emails (purchase, low balance) on or off',
  security: SESSION_AND_CSRF,
  middleware: [requireSession()] as const,
  request: { body: { required: true, content: { 'application/json': { schema: EmailSettingsChange } } } },
  responses: {
    200: jsonContent(dataOf(EmailSettings), 'The email settings now.'),
    ...errorResponses(401, 403, 422),
  },
});

/** The customer's email opt-outs (docs/emails.md). */
export function emailSettingsRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(readRoute, async (c) =>
    c.json({ data: await emailSettingsOf(c.get('deps'), c.get('auth').account.id) }, 200),
  );
  app.openapi(changeRoute, async (c) =>
    c.json(
      { data: await changeEmailSettings(c.get('deps'), c.get('auth').account.id, c.req.valid('json')) },
      200,
    ),
  );
  return app;
}
