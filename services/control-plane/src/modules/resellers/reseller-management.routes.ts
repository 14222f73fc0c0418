import { createRoute, OpenAPIHono, type z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { validationHook } from '../../http/errors.ts';
import { type ManagementEnv, managementActor, requireManagementKey } from '../../http/management-key.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { managementKey } from '../../http/openapi-security.ts';
import { AccountPageView, PageQuery, toAccountPageView } from '../accounts/accounts.schemas.ts';
import {
  ApiKeyView,
  CreateKeyRequest,
  KeyStatusChangeRequest,
  KeyWithSecret,
  toApiKeyView,
} from '../api-keys/api-keys.schemas.ts';
import {
  changeCustomerKeyStatus,
  createCustomerKey,
  listCustomers,
  readCustomerUsage,
} from './customers.service.ts';
import { grantToCustomer } from './grants.service.ts';
import {
  CustomerIdParam,
  CustomerKeyParams,
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

function noStore(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    c.header('Cache-Control', 'no-store');
  };
}

const tags = ['reseller-management'];

const listRoute = createRoute({
  method: 'get',
  path: '/reseller-management/customers',
  tags,
  summary: 'List your customers (scope customers:read)',
  security: managementKey('customers:read'),
  middleware: [requireManagementKey('customers:read')] as const,
  request: { query: PageQuery },
  responses: {
    200: jsonContent(dataOf(AccountPageView), 'Customers, newest first.'),
    ...errorResponses(401, 403, 422, 429),
  },
});

const grantRoute = createRoute({
  method: 'post',
  path: '/reseller-management/customers/{id}/grants',
  tags,
  summary: 'Grant tokens of a package you hold, or credit, to a customer (scope grants:write)',
  description:
    'A transfer out of your own holdings (insufficient_tokens / insufficient_credits, 402, when you hold less). ' +
    'Idempotency-Key: the same key with the same body answers the first result (200); another body, 422.',
  security: managementKey('grants:write'),
  middleware: [requireManagementKey('grants:write')] as const,
  request: { params: CustomerIdParam, headers: IdempotencyHeaders, body: json(GrantBody) },
  responses: {
    201: jsonContent(dataOf(GrantView), 'The grant.'),
    200: jsonContent(dataOf(GrantView), 'The first result of this Idempotency-Key.'),
    ...errorResponses(401, 402, 403, 404, 422, 429),
  },
});

const usageRoute = createRoute({
  method: 'get',
  path: '/reseller-management/customers/{id}/usage',
  tags,
  summary: "A customer's balance and usage per day and alias (scope usage:read)",
  security: managementKey('usage:read'),
  middleware: [requireManagementKey('usage:read')] as const,
  request: { params: CustomerIdParam, query: UsageQuery },
  responses: {
    200: jsonContent(dataOf(CustomerUsageView), 'Usage.'),
    ...errorResponses(401, 403, 404, 422, 429),
  },
});

const createKeyRoute = createRoute({
  method: 'post',
  path: '/reseller-management/customers/{id}/api-keys',
  tags,
  summary: 'Create an inference key for a customer, secret returned once (scope keys:write)',
  security: managementKey('keys:write'),
  middleware: [noStore(), requireManagementKey('keys:write')] as const,
  request: { params: CustomerIdParam, body: json(CreateKeyRequest) },
  responses: {
    201: jsonContent(dataOf(KeyWithSecret), 'The key and its secret.'),
    ...errorResponses(401, 403, 404, 422, 429),
  },
});

const keyStatusRoute = createRoute({
  method: 'patch',
  path: '/reseller-management/customers/{id}/api-keys/{keyId}/status',
  tags,
  summary: "Disable, re-enable or revoke a customer's key (scope keys:status)",
  security: managementKey('keys:status'),
  middleware: [requireManagementKey('keys:status')] as const,
  request: { params: CustomerKeyParams, body: json(KeyStatusChangeRequest) },
  responses: { 200: jsonContent(dataOf(ApiKeyView), 'The key.'), ...errorResponses(401, 403, 404, 422, 429) },
});

/**
 * /reseller-management: the six endpoints of reseller software, each behind one management-key
 * scope. Records outside the reseller's own customers are not_found.
 */
export function resellerManagementRoutes() {
  const app = new OpenAPIHono<ManagementEnv>({ defaultHook: validationHook });
  app.openapi(listRoute, async (c) => {
    const page = await listCustomers(c.get('deps').db, c.get('management').resellerId, c.req.valid('query'));
    return c.json({ data: toAccountPageView(page) }, 200);
  });
  app.openapi(grantRoute, async (c) => {
    const granted = await grantToCustomer(
      c.get('deps'),
      managementActor(c),
      c.req.valid('param').id,
      toGrantRequest(c.req.valid('json')),
      c.req.valid('header')['idempotency-key'] ?? null,
    );
    return c.json({ data: granted.result }, granted.replay ? 200 : 201);
  });
  app.openapi(usageRoute, async (c) => {
    const deps = c.get('deps');
    const range = usageRange(c.req.valid('query'), deps.clock.now());
    const usage = await readCustomerUsage(
      deps,
      c.get('management').resellerId,
      c.req.valid('param').id,
      range,
    );
    return c.json({ data: usage }, 200);
  });
  app.openapi(createKeyRoute, async (c) => {
    const created = await createCustomerKey(
      c.get('deps'),
      managementActor(c),
      c.req.valid('param').id,
      c.req.valid('json'),
    );
    return c.json({ data: { key: toApiKeyView(created.key), secret: created.secret } }, 201);
  });
  app.openapi(keyStatusRoute, async (c) => {
    const { id, keyId } = c.req.valid('param');
    const key = await changeCustomerKeyStatus(
      c.get('deps'),
      managementActor(c),
      id,
      keyId,
      c.req.valid('json').status,
    );
    return c.json({ data: toApiKeyView(key) }, 200);
  });
  return app;
}
