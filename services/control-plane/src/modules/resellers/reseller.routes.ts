import { createRoute, OpenAPIHono, type z } from '@hono/zod-openapi';
import { validationHook } from '../../http/errors.ts';
import { sessionActor } from '../../http/management-key.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import {
  AccountPageView,
  AccountView,
  PageQuery,
  toAccountPageView,
  toAccountView,
} from '../accounts/accounts.schemas.ts';
import { ActivityPage, ActivityQuery } from '../billing/billing.schemas.ts';
import { findCustomer, listCustomers, readCustomerActivity, readCustomerUsage } from './customers.service.ts';
import { grantToCustomer } from './grants.service.ts';
import {
  CustomerIdParam,
  CustomerUsageView,
  GrantBody,
  GrantView,
  IdempotencyHeaders,
  toGrantRequest,
  UsageQuery,
  usageRange,
} from './resellers.schemas.ts';

const json = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

const listRoute = createRoute({
  method: 'get',
  path: '/reseller/customers',
  tags: ['reseller'],
  summary: "List the reseller's own customers",
  security: SESSION,
  middleware: [requireSession(), requireRole('reseller')] as const,
  request: { query: PageQuery },
  responses: {
    200: jsonContent(dataOf(AccountPageView), 'Customers, newest first.'),
    ...errorResponses(401, 403, 422),
  },
});

const readCustomerRoute = createRoute({
  method: 'get',
  path: '/reseller/customers/{id}',
  tags: ['reseller'],
  summary: 'Read one of your customers',
  security: SESSION,
  middleware: [requireSession(), requireRole('reseller')] as const,
  request: { params: CustomerIdParam },
  responses: { 200: jsonContent(dataOf(AccountView), 'The customer.'), ...errorResponses(401, 403, 404) },
});

const grantRoute = createRoute({
  method: 'post',
  path: '/reseller/customers/{id}/grants',
  tags: ['reseller'],
  summary: 'Grant tokens of a package you hold, or credit, to a customer',
  description:
    'A transfer out of your own holdings, never more than you hold (insufficient_tokens / insufficient_credits, 402). ' +
    'Idempotent by Idempotency-Key.',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('reseller')] as const,
  request: { params: CustomerIdParam, headers: IdempotencyHeaders, body: json(GrantBody) },
  responses: {
    201: jsonContent(dataOf(GrantView), 'The grant.'),
    200: jsonContent(dataOf(GrantView), 'The first result of this Idempotency-Key.'),
    ...errorResponses(401, 402, 403, 404, 422),
  },
});

const usageRoute = createRoute({
  method: 'get',
  path: '/reseller/customers/{id}/usage',
  tags: ['reseller'],
  summary: "A customer's balance and usage per day and alias",
  security: SESSION,
  middleware: [requireSession(), requireRole('reseller')] as const,
  request: { params: CustomerIdParam, query: UsageQuery },
  responses: { 200: jsonContent(dataOf(CustomerUsageView), 'Usage.'), ...errorResponses(401, 403, 404, 422) },
});

const activityRoute = createRoute({
  method: 'get',
  path: '/reseller/customers/{id}/activity',
  tags: ['reseller'],
  summary: "A customer's activity (metered calls), newest first",
  security: SESSION,
  middleware: [requireSession(), requireRole('reseller')] as const,
  request: { params: CustomerIdParam, query: ActivityQuery },
  responses: { 200: jsonContent(dataOf(ActivityPage), 'Activity.'), ...errorResponses(401, 403, 404, 422) },
});

/** /reseller: customers, grants, usage and activity (keys in reseller-keys.routes.ts). */
export function resellerRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(listRoute, async (c) => {
    const page = await listCustomers(c.get('deps').db, c.get('auth').account.id, c.req.valid('query'));
    return c.json({ data: toAccountPageView(page) }, 200);
  });
  app.openapi(readCustomerRoute, async (c) => {
    const customer = await findCustomer(c.get('deps').db, c.get('auth').account.id, c.req.valid('param').id);
    return c.json({ data: toAccountView(customer) }, 200);
  });
  app.openapi(grantRoute, async (c) => {
    const granted = await grantToCustomer(
      c.get('deps'),
      sessionActor(c),
      c.req.valid('param').id,
      toGrantRequest(c.req.valid('json')),
      c.req.valid('header')['idempotency-key'] ?? null,
    );
    return c.json({ data: granted.result }, granted.replay ? 200 : 201);
  });
  app.openapi(usageRoute, async (c) => {
    const deps = c.get('deps');
    const range = usageRange(c.req.valid('query'), deps.clock.now());
    const usage = await readCustomerUsage(deps, c.get('auth').account.id, c.req.valid('param').id, range);
    return c.json({ data: usage }, 200);
  });
  app.openapi(activityRoute, async (c) => {
    const query = c.req.valid('query');
    const page = await readCustomerActivity(
      c.get('deps'),
      c.get('auth').account.id,
      c.req.valid('param').id,
      {
        limit: query.limit,
        ...(query.keyId ? { keyId: query.keyId } : {}),
        ...(query.cursor ? { cursor: query.cursor } : {}),
      },
    );
    return c.json({ data: page }, 200);
  });
  return app;
}
