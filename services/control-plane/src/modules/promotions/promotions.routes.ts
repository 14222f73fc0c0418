import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import { adminCallerOf, codeCallerOf } from '../orders/admin-orders.routes.ts';
import { OrderIdParam } from '../orders/orders.schemas.ts';
import {
  CreatePromotionRequest,
  PreviewRequest,
  PreviewView,
  PromotionPage,
  PromotionsQuery,
  PromotionView,
  toPromotionView,
  UpdatePromotionRequest,
} from './promotions.schemas.ts';
import { changePromotion, createPromotion, listPromotions, previewPromotion } from './promotions.service.ts';

const admin = { tags: ['admin'], middleware: [requireSession(), requireRole('admin')] };

const previewRoute = createRoute({
  tags: ['orders'],
  middleware: [requireSession()] as const,
  security: SESSION_AND_CSRF,
  method: 'post',
  path: '/promotions/preview',
  summary: 'Preview a code on a package: price before, discount, price after and bonus; reserves nothing',
  description:
    'A code that does not apply answers validation_failed with the reason under errors.code. Previews and ' +
    'orders naming a code are throttled per account and per client address (rate_limit_exceeded, Retry-After).',
  request: { body: { required: true, content: { 'application/json': { schema: PreviewRequest } } } },
  responses: {
    200: jsonContent(dataOf(PreviewView), 'The preview.'),
    ...errorResponses(401, 403, 404, 422, 429),
  },
});

const listRoute = createRoute({
  ...admin,
  security: SESSION,
  method: 'get',
  path: '/admin/promotions',
  summary: 'Promotions, newest first (admin)',
  request: { query: PromotionsQuery },
  responses: {
    200: jsonContent(dataOf(PromotionPage), 'A page of promotions.'),
    ...errorResponses(401, 403, 422),
  },
});

const createPromotionRoute = createRoute({
  ...admin,
  security: SESSION_AND_CSRF,
  method: 'post',
  path: '/admin/promotions',
  summary: 'Create a promotion code (admin, audited)',
  request: { body: { required: true, content: { 'application/json': { schema: CreatePromotionRequest } } } },
  responses: { 201: jsonContent(dataOf(PromotionView), 'The promotion.'), ...errorResponses(401, 403, 422) },
});

const updateRoute = createRoute({
  ...admin,
  security: SESSION_AND_CSRF,
  method: 'patch',
  path: '/admin/promotions/{id}',
  summary: 'Deactivate a promotion or change its end and limits (admin, audited)',
  request: {
    params: OrderIdParam,
    body: { required: true, content: { 'application/json': { schema: UpdatePromotionRequest } } },
  },
  responses: {
    200: jsonContent(dataOf(PromotionView), 'The promotion.'),
    ...errorResponses(401, 403, 404, 422),
  },
});

export function promotionRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(previewRoute, async (c) =>
    c.json({ data: await previewPromotion(c.get('deps'), codeCallerOf(c), c.req.valid('json')) }, 200),
  );
  app.openapi(listRoute, async (c) => {
    const query = c.req.valid('query');
    const rows = await listPromotions(c.get('deps'), {
      limit: query.limit,
      ...(query.after ? { after: query.after } : {}),
      ...(query.active ? { active: query.active === 'true' } : {}),
    });
    const nextCursor = rows.length === query.limit ? rows[rows.length - 1]!.id : null;
    return c.json({ data: { items: rows.map(toPromotionView), nextCursor } }, 200);
  });
  app.openapi(createPromotionRoute, async (c) => {
    const body = c.req.valid('json');
    const row = await createPromotion(c.get('deps'), adminCallerOf(c), {
      ...body,
      bonus: body.bonus === undefined ? undefined : BigInt(body.bonus),
      startsAt: body.startsAt ? new Date(body.startsAt) : undefined,
      endsAt: body.endsAt ? new Date(body.endsAt) : undefined,
    });
    return c.json({ data: toPromotionView(row) }, 201);
  });
  app.openapi(updateRoute, async (c) => {
    const body = c.req.valid('json');
    const row = await changePromotion(c.get('deps'), adminCallerOf(c), c.req.valid('param').id, {
      ...body,
      endsAt: body.endsAt === undefined ? undefined : body.endsAt === null ? null : new Date(body.endsAt),
    });
    return c.json({ data: toPromotionView(row) }, 200);
  });
  return app;
}
