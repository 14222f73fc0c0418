import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import { Ceiling, KeyLimitsView } from './api-keys.schemas.ts';
import { readKeyMaxima, setAccountKeyLimits } from './key-limits.service.ts';

const KeyMaximaView = z
  .object({
    account: KeyLimitsView.openapi({ description: "The account's maxima (admin-set, else the defaults)." }),
    effective: KeyLimitsView.openapi({
      description:
        'What a new key may have now: the account maxima within the plan ceilings of its packages.',
    }),
    defaults: KeyLimitsView.openapi({
      description:
        "What a new key gets for a ceiling left out: its packages' rate and concurrency when they set them, else the configured defaults; never above effective.",
    }),
  })
  .openapi('KeyMaxima');

const SetAccountKeyLimitsRequest = z
  .object({
    maxRequestBytes: Ceiling('maxRequestBytes').nullable().optional(),
    maxOutputTokens: Ceiling('maxOutputTokens').nullable().optional(),
    requestsPerMinute: Ceiling('requestsPerMinute').nullable().optional(),
    concurrency: Ceiling('concurrency').nullable().optional(),
  })
  .strict()
  .openapi('SetAccountKeyLimitsRequest', {
    description: 'Each field left out stays as it is; null returns it to the configured default.',
  });

const AccountIdParam = z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' } }) });

const readMaximaRoute = createRoute({
  method: 'get',
  path: '/me/api-keys/limits',
  tags: ['api-keys'],
  summary: 'The most each key ceiling may be set to on your account',
  security: SESSION,
  middleware: [requireSession()] as const,
  responses: { 200: jsonContent(dataOf(KeyMaximaView), 'Key maxima.'), ...errorResponses(401, 403) },
});

const setLimitsRoute = createRoute({
  method: 'patch',
  path: '/admin/accounts/{id}/limits',
  tags: ['admin'],
  summary: "Set the maxima of an account's key ceilings (admin)",
  description:
    'Customers can choose key ceilings only at or below these (and the plan ceilings of their packages). ' +
    'Existing keys above a new maximum are lowered to it at once.',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    params: AccountIdParam,
    body: { required: true, content: { 'application/json': { schema: SetAccountKeyLimitsRequest } } },
  },
  responses: {
    200: jsonContent(
      dataOf(KeyMaximaView.extend({ loweredKeyIds: z.array(z.string()) })),
      'The new maxima and the keys lowered to them.',
    ),
    ...errorResponses(401, 403, 404, 422),
  },
});

/** Key maxima: the customer's view under /me, the operator's setting under /admin. */
export function keyLimitsRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });

  app.openapi(readMaximaRoute, async (c) => {
    return c.json({ data: await readKeyMaxima(c.get('deps'), c.get('auth').account.id) }, 200);
  });

  app.openapi(setLimitsRoute, async (c) => {
    const { maxima, loweredKeyIds } = await setAccountKeyLimits(
      c.get('deps'),
      c.req.valid('param').id,
      c.req.valid('json'),
    );
    return c.json({ data: { ...maxima, loweredKeyIds } }, 200);
  });

  return app;
}
