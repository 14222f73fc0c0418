import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from '../../http/env.ts';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { receiveNotification } from './payment-flows.service.ts';

const webhookRoute = createRoute({
  tags: ['payments'],
  method: 'post',
  path: '/payments/stripe/webhook',
  summary: 'Stripe webhook (public; Stripe-Signature verified over the raw body)',
  description:
    'checkout.session.* events settle the matching order exactly once; charge.refunded and ' +
    'charge.dispute.created take back its unused grant (a dispute also suspends the account), reported in the audit log. A bad signature or an event older ' +
    'than five minutes is refused (validation_failed) and logged; a replayed event id is acknowledged and ignored. ' +
    'outcome says what the event changed (paid, already_paid, refunded, disputed, reported, mismatch, failed, unchanged, pending, unknown_payment, ignored, duplicate).',
  request: {
    // No body schema on purpose: a validator would parse the JSON, and the signature needs the raw bytes.
    headers: z.object({ 'stripe-signature': z.string().optional() }),
  },
  responses: {
    200: jsonContent(dataOf(z.object({ received: z.literal(true), outcome: z.string() })), 'Received.'),
    ...errorResponses(404, 422),
  },
});

/** Public: the provider calls it, authenticated by its signature only. */
export function paymentWebhookRoutes() {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.openapi(webhookRoute, async (c) => {
    // The signature covers the exact bytes received, so the raw text is verified, never re-serialised JSON.
    const raw = await c.req.text();
    const result = await receiveNotification(c.get('deps'), 'stripe', raw, c.req.header('stripe-signature'));
    return c.json({ data: result }, 200);
  });
  return app;
}
