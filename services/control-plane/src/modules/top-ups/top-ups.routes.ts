import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireSession, type SessionEnv } from '../../http/session.ts';
import { forgetAutoTopUpCard, putAutoTopUp, readAutoTopUp } from './auto-top-up.service.ts';

const INTEGER = /^(?:0|[1-9][0-9]{0,18})$/;

const AutoTopUpView = z
  .object({
    enabled: z.boolean(),
    threshold: z
      .string()
      .openapi({ description: 'Credits: a balance below it charges one top-up', example: '500000' }),
    amount: z
      .object({ amount: z.string(), currency: z.string(), exponent: z.number().int() })
      .nullable()
      .openapi({
        description: 'What each automatic top-up charges (minor units); null before a card is kept',
      }),
    cardSaved: z.boolean().openapi({ description: 'A card kept by a Stripe top-up (savePaymentMethod)' }),
    armed: z.boolean().openapi({
      description: 'false after a top-up was charged, until the balance is back at or above the threshold',
    }),
    lastFailure: z.string().nullable().openapi({ description: 'Why the last automatic top-up was not paid' }),
  })
  .openapi('AutoTopUp');

const PutAutoTopUpRequest = z
  .object({
    enabled: z.boolean(),
    threshold: z
      .string('Say the balance, in credits, below which to top up.')
      .regex(INTEGER, 'Whole credits.'),
    amount: z
      .string('Say how much each top-up charges.')
      .regex(INTEGER, 'Integer minor units of the catalogue currency, as a string.'),
  })
  .openapi('PutAutoTopUpRequest');

const base = { tags: ['me'], middleware: [requireSession()] };
const body = (description: string) => jsonContent(dataOf(AutoTopUpView), description);

const readRoute = createRoute({
  ...base,
  security: SESSION,
  method: 'get',
  path: '/me/auto-top-up',
  summary: 'Automatic top-up: threshold, amount, whether a card is kept',
  responses: { 200: body('The settings.'), ...errorResponses(401, 403) },
});

const putRoute = createRoute({
  ...base,
  security: SESSION_AND_CSRF,
  method: 'put',
  path: '/me/auto-top-up',
  summary:
    'Turn automatic top-up on or off (a kept Stripe card is charged when the balance falls below the threshold)',
  description:
    'After a settlement leaves the account holding fewer credits than threshold, the kept card is charged ' +
    'amount once for that crossing; it arms again when the balance is back at or above the threshold. The ' +
    'amount must be within the top-up bounds (GET /catalog/credit). Turning it on needs a kept card: top up ' +
    'through Stripe with savePaymentMethod.',
  request: { body: { required: true, content: { 'application/json': { schema: PutAutoTopUpRequest } } } },
  responses: { 200: body('The settings.'), ...errorResponses(401, 403, 422) },
});

const forgetRoute = createRoute({
  ...base,
  security: SESSION_AND_CSRF,
  method: 'delete',
  path: '/me/auto-top-up/card',
  summary: 'Forget the kept card (automatic top-up turns off)',
  responses: { 200: body('The settings.'), ...errorResponses(401, 403) },
});

/** /me/auto-top-up: the signed-in account's own settings only. */
export function autoTopUpRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(readRoute, async (c) =>
    c.json({ data: await readAutoTopUp(c.get('deps'), c.get('auth').account.id) }, 200),
  );
  app.openapi(putRoute, async (c) => {
    const input = c.req.valid('json');
    const view = await putAutoTopUp(c.get('deps'), c.get('auth').account.id, {
      enabled: input.enabled,
      threshold: BigInt(input.threshold),
      amount: BigInt(input.amount),
    });
    return c.json({ data: view }, 200);
  });
  app.openapi(forgetRoute, async (c) =>
    c.json({ data: await forgetAutoTopUpCard(c.get('deps'), c.get('auth').account.id) }, 200),
  );
  return app;
}
