import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireSession, type SessionEnv } from '../../http/session.ts';
import { cancelOrder, readPayment, startPayment, verifyPayment } from '../payments/payment-flows.service.ts';
import { codeCallerOf } from './admin-orders.routes.ts';
import {
  CreateOrderRequest,
  CreateTopUpRequest,
  OrderIdParam,
  OrderPage,
  OrdersQuery,
  OrderView,
  toOrderView,
} from './orders.schemas.ts';
import { createOrder, createTopUp, listOrders, readOwnOrder } from './orders.service.ts';

const base = { tags: ['orders'], middleware: [requireSession()] };
const orderBody = (description: string) => jsonContent(dataOf(OrderView), description);

const listRoute = createRoute({
  ...base,
  security: SESSION,
  method: 'get',
  path: '/orders',
  summary: "The caller's orders, newest first (cursor paging; filter by status or package)",
  request: { query: OrdersQuery },
  responses: { 200: jsonContent(dataOf(OrderPage), 'A page of orders.'), ...errorResponses(401, 403, 422) },
});

const createOrderRoute = createRoute({
  ...base,
  security: SESSION_AND_CSRF,
  method: 'post',
  path: '/orders',
  summary: 'Order a package, optionally with a promotion code; the price is fixed now',
  description:
    'The order is pending until paid and expires after ORDER_TTL_MINUTES. A promotion code holds one ' +
    'redemption until the order is paid (consumed) or ends unpaid (returned). An order priced at zero is paid at once.',
  request: { body: { required: true, content: { 'application/json': { schema: CreateOrderRequest } } } },
  responses: { 201: orderBody('The order.'), ...errorResponses(401, 403, 404, 422, 429) },
});

const createTopUpRoute = createRoute({
  ...base,
  security: SESSION_AND_CSRF,
  method: 'post',
  path: '/top-ups',
  summary: 'Top up credit: any amount within the catalogue bounds, paid like a package order',
  description:
    'Creates a pending order of kind top_up that grants credits (amount / the credit value, rounded down ' +
    'to a whole credit); pay it with POST /orders/{id}/payment and verify as any order. The bounds and ' +
    'the credit value are in GET /catalog/credit; outside them, or with no top-up offered: validation_failed. ' +
    'With Idempotency-Key the same request answers the same order (a form sent twice orders once).',
  request: {
    headers: z.object({
      'idempotency-key': z
        .string()
        .min(1)
        .max(200)
        .optional()
        .openapi({ param: { name: 'idempotency-key', in: 'header' } }),
    }),
    body: { required: true, content: { 'application/json': { schema: CreateTopUpRequest } } },
  },
  responses: { 201: orderBody('The top-up order.'), ...errorResponses(401, 403, 422) },
});

const readRoute = createRoute({
  ...base,
  security: SESSION,
  method: 'get',
  path: '/orders/{id}',
  summary: 'Read an order with its payment',
  request: { params: OrderIdParam },
  responses: { 200: orderBody('The order.'), ...errorResponses(401, 403, 404) },
});

const cancelRoute = createRoute({
  ...base,
  security: SESSION_AND_CSRF,
  method: 'post',
  path: '/orders/{id}/cancel',
  summary: 'Cancel a pending order (its promotion hold is returned)',
  description:
    'A Stripe Checkout Session still open is expired at Stripe first, so it can no longer be paid; one ' +
    'paid first pays the order instead (validation_failed: the order is paid). Stripe unreachable: server_error (503), the order stays pending.',
  request: { params: OrderIdParam },
  responses: { 200: orderBody('The cancelled order.'), ...errorResponses(401, 403, 404, 422, 503) },
});

const readPaymentRoute = createRoute({
  ...base,
  security: SESSION,
  method: 'get',
  path: '/orders/{id}/payment',
  summary: "Read the order's payment (not_found before it is started)",
  request: { params: OrderIdParam },
  responses: { 200: orderBody('The order; its payment is in payment.'), ...errorResponses(401, 403, 404) },
});

const startPaymentRoute = createRoute({
  ...base,
  security: SESSION_AND_CSRF,
  method: 'post',
  path: '/orders/{id}/payment',
  summary: 'Start paying the order with its provider (a repeat returns the payment already started)',
  description:
    'payment.nextStep says what comes next: redirect (Stripe Checkout at payment.redirectUrl, then verify), ' +
    'verify (development provider: call verify), wait (manual: pay as payment.instructions say, quoting the reference).',
  request: { params: OrderIdParam },
  responses: {
    200: orderBody('The order; its payment is in payment.'),
    ...errorResponses(401, 403, 404, 422),
  },
});

const verifyRoute = createRoute({
  ...base,
  security: SESSION_AND_CSRF,
  method: 'post',
  path: '/orders/{id}/payment/verify',
  summary: 'Ask for a payment re-check; safe to repeat, a verified payment credits the account exactly once',
  description:
    'Paid: 200 with the paid order. Not confirmed yet: payment_pending (402, Retry-After). Failed, expired, ' +
    'or an amount or currency that differs from the order: payment_verification_failed (402).',
  request: { params: OrderIdParam },
  responses: { 200: orderBody('The paid order.'), ...errorResponses(401, 402, 403, 404, 422) },
});

/** Customer routes of /orders: every one answers not_found for another account's order. */
export function orderRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(listRoute, async (c) => {
    const deps = c.get('deps');
    const query = c.req.valid('query');
    const page = await listOrders(deps, { ...query, accountId: c.get('auth').account.id });
    return c.json(
      { data: { items: page.items.map((item) => toOrderView(deps, item)), nextCursor: page.nextCursor } },
      200,
    );
  });
  app.openapi(createOrderRoute, async (c) => {
    const deps = c.get('deps');
    const order = await createOrder(deps, codeCallerOf(c), c.req.valid('json'));
    return c.json({ data: toOrderView(deps, order) }, 201);
  });
  app.openapi(createTopUpRoute, async (c) => {
    const deps = c.get('deps');
    const body = c.req.valid('json');
    const order = await createTopUp(deps, c.get('auth').account.id, {
      amount: BigInt(body.amount),
      provider: body.provider,
      savePaymentMethod: body.savePaymentMethod,
      idempotencyKey: c.req.valid('header')['idempotency-key'] ?? null,
    });
    return c.json({ data: toOrderView(deps, order) }, 201);
  });
  app.openapi(readRoute, async (c) => {
    const deps = c.get('deps');
    const order = await readOwnOrder(deps, c.get('auth').account.id, c.req.valid('param').id);
    return c.json({ data: toOrderView(deps, order) }, 200);
  });
  app.openapi(cancelRoute, async (c) => {
    const deps = c.get('deps');
    const order = await cancelOrder(deps, c.get('auth').account.id, c.req.valid('param').id);
    return c.json({ data: toOrderView(deps, order) }, 200);
  });
  app.openapi(readPaymentRoute, async (c) => {
    const deps = c.get('deps');
    const order = await readPayment(deps, c.get('auth').account.id, c.req.valid('param').id);
    return c.json({ data: toOrderView(deps, order) }, 200);
  });
  app.openapi(startPaymentRoute, async (c) => {
    const deps = c.get('deps');
    const order = await startPayment(deps, c.get('auth').account.id, c.req.valid('param').id);
    return c.json({ data: toOrderView(deps, order) }, 200);
  });
  app.openapi(verifyRoute, async (c) => {
    const deps = c.get('deps');
    const order = await verifyPayment(deps, c.get('auth').account.id, c.req.valid('param').id);
    return c.json({ data: toOrderView(deps, order) }, 200);
  });
  return app;
}
