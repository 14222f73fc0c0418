import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireSession, type SessionEnv } from '../../http/session.ts';
import { AccountView, DisplayName, toAccountView } from './accounts.schemas.ts';
import { updateProfile } from './accounts.service.ts';

const UpdateMeRequest = z
  .object({ displayName: DisplayName.nullable().optional() })
  .openapi('UpdateMeRequest');

const getMeRoute = createRoute({
  method: 'get',
  path: '/me',
  tags: ['me'],
  summary: 'Read the signed-in account',
  security: SESSION,
  middleware: [requireSession()] as const,
  responses: { 200: jsonContent(dataOf(AccountView), 'The account.'), ...errorResponses(401, 403) },
});

const patchMeRoute = createRoute({
  method: 'patch',
  path: '/me',
  tags: ['me'],
  summary: 'Update the signed-in account (display name)',
  security: SESSION_AND_CSRF,
  middleware: [requireSession()] as const,
  request: { body: { required: true, content: { 'application/json': { schema: UpdateMeRequest } } } },
  responses: {
    200: jsonContent(dataOf(AccountView), 'The updated account.'),
    ...errorResponses(401, 403, 422),
  },
});

export function meRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });

  app.openapi(getMeRoute, (c) => c.json({ data: toAccountView(c.get('auth').account) }, 200));

  app.openapi(patchMeRoute, async (c) => {
    const account = await updateProfile(c.get('deps'), c.get('auth').account.id, c.req.valid('json'));
    return c.json({ data: toAccountView(account) }, 200);
  });

  return app;
}
