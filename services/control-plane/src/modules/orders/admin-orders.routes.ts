import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { AppError } from '@tollgate/errors';
import type { Context } from 'hono';
import { clientAddressOf, userAgentOf } from '../../http/client-address.ts';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import type { AdminCaller } from './admin-audit.ts';
import { confirmManualPayment, refundOrder, rejectManualPayment } from './admin-orders.service.ts';
import {
  AdminNoteRequest,
  AdminOrdersQuery,
  AdminRefundRequest,
  OrderIdParam,
  OrderPage,
  OrderView,
  toOrderView,
} from './orders.schemas.ts';
import { listOrders, readAnyOrder } from './orders.service.ts';

const base = { tags: ['admin'], middleware: [requireSession(), requireRole('admin')] };
const noteBody = { required: false, content: { 'application/json': { schema: AdminNoteRequest } } };

/** The admin behind a request, for the audit row. */
export function adminCallerOf(c: Context<SessionEnv>): AdminCaller {
  const auth = c.get('auth');
  return {
    accountId: auth.account.id,
    sessionId: auth.session.id,
    ip: clientAddressOf(c, c.get('deps').config.trustProxy),
    userAgent: userAgentOf(c),
  };
}

/** The customer and address naming a promotion code, for its throttles. */
export function codeCallerOf(c: Context<SessionEnv>): { accountId: string; ip: string } {
  return {
    accountId: c.get('auth').account.id,
    ip: clientAddressOf(c, c.get('deps').config.trustProxy),
  };
}

const listRoute = createRoute({
  ...base,
  security: SESSION,
  method: 'get',
  path: '/admin/orders',
  summary:
    'Every order, newest first, with its payment (admin; filter by status, account, provider, package)',
  request: { query: AdminOrdersQuery },
  responses: { 200: jsonContent(dataOf(OrderPage), 'A page of orders.'), ...errorResponses(401, 403, 422) },
});

const readRoute = createRoute({
  ...base,
  security: SESSION,
  method: 'get',
  path: '/admin/orders/{id}',
  summary: 'Read any order with its payment (admin)',
  request: { params: OrderIdParam },
  responses: { 200: jsonContent(dataOf(OrderView), 'The order.'), ...errorResponses(401, 403, 404) },
});

const action = (path: string, summary: string) =>
  createRoute({
    ...base,
    security: SESSION_AND_CSRF,
    method: 'post',
    path,
    summary,
    request: { params: OrderIdParam, body: noteBody },
    responses: { 200: jsonContent(dataOf(OrderView), 'The order.'), ...errorResponses(401, 403, 404, 422) },
  });

const confirmRoute = action(
  '/admin/orders/{id}/payment/confirm',
  'Confirm a manual payment: the order is paid and granted (admin, audited)',
);
const rejectRoute = action(
  '/admin/orders/{id}/payment/reject',
  'Reject a manual payment: the order fails (admin, audited)',
);
const refundRoute = createRoute({
  ...base,
  security: SESSION_AND_CSRF,
  method: 'post',
  path: '/admin/orders/{id}/refund',
  summary:
    'Refund a paid order through its provider and take back the unused rest of its grant (admin, audited)',
  description:
    'A reason (note) is required and kept in the audit row. An order is refunded once: with ' +
    'Idempotency-Key a repeat of the same refund answers the refunded order again (replay); without ' +
    'one, or with another key, a second refund is 422.',
  request: {
    params: OrderIdParam,
    headers: z.object({
      'idempotency-key': z
        .string()
        .min(1)
        .max(200)
        .optional()
        .openapi({ param: { name: 'idempotency-key', in: 'header' } }),
    }),
    body: { required: true, content: { 'application/json': { schema: AdminRefundRequest } } },
  },
  responses: { 200: jsonContent(dataOf(OrderView), 'The order.'), ...errorResponses(401, 403, 404, 422) },
});

async function noteOf(c: Context): Promise<string | undefined> {
  // The note is optional and so is the body.
  const text = await c.req.text();
  if (!text) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw AppError.validation({ body: ['Send a valid JSON body.'] });
  }
  const parsed = AdminNoteRequest.safeParse(body);
  if (!parsed.success) throw AppError.validation({ note: ['Use at most 500 characters.'] });
  return parsed.data.note;
}

export function adminOrderRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(listRoute, async (c) => {
    const deps = c.get('deps');
    const page = await listOrders(deps, c.req.valid('query'));
    return c.json(
      { data: { items: page.items.map((item) => toOrderView(deps, item)), nextCursor: page.nextCursor } },
      200,
    );
  });
  app.openapi(readRoute, async (c) => {
    const deps = c.get('deps');
    return c.json({ data: toOrderView(deps, await readAnyOrder(deps, c.req.valid('param').id)) }, 200);
  });
  app.openapi(confirmRoute, async (c) => {
    const deps = c.get('deps');
    const order = await confirmManualPayment(
      deps,
      adminCallerOf(c),
      c.req.valid('param').id,
      await noteOf(c),
    );
    return c.json({ data: toOrderView(deps, order) }, 200);
  });
  app.openapi(rejectRoute, async (c) => {
    const deps = c.get('deps');
    const order = await rejectManualPayment(deps, adminCallerOf(c), c.req.valid('param').id, await noteOf(c));
    return c.json({ data: toOrderView(deps, order) }, 200);
  });
  app.openapi(refundRoute, async (c) => {
    const deps = c.get('deps');
    const order = await refundOrder(
      deps,
      adminCallerOf(c),
      c.req.valid('param').id,
      c.req.valid('json').note,
      c.req.valid('header')['idempotency-key'] ?? null,
    );
    return c.json({ data: toOrderView(deps, order) }, 200);
  });
  return app;
}
