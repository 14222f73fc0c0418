import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { validationHook } from '../../http/errors.ts';
import { sessionActor } from '../../http/management-key.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import {
  ApiKeyView,
  CreateKeyRequest,
  KeyStatusChangeRequest,
  KeyWithSecret,
  toApiKeyView,
} from '../api-keys/api-keys.schemas.ts';
import {
  createManagementKey,
  listManagementKeys,
  revokeManagementKey,
} from '../management-keys/management-keys.service.ts';
import { changeCustomerKeyStatus, createCustomerKey, listCustomerKeys } from './customers.service.ts';
import {
  CreateManagementKeyRequest,
  CustomerIdParam,
  CustomerKeyParams,
  ManagementKeyView,
  ManagementKeyWithSecret,
  toManagementKeyView,
} from './resellers.schemas.ts';

/** Answers that carry a secret are never cached. */
function noStore(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    c.header('Cache-Control', 'no-store');
  };
}

const json = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});
const KeyIdParam = z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' } }) });

const listCustomerKeysRoute = createRoute({
  method: 'get',
  path: '/reseller/customers/{id}/api-keys',
  tags: ['reseller'],
  summary: "List a customer's inference keys (masked)",
  security: SESSION,
  middleware: [requireSession(), requireRole('reseller')] as const,
  request: { params: CustomerIdParam },
  responses: { 200: jsonContent(dataOf(z.array(ApiKeyView)), 'Keys.'), ...errorResponses(401, 403, 404) },
});

const createCustomerKeyRoute = createRoute({
  method: 'post',
  path: '/reseller/customers/{id}/api-keys',
  tags: ['reseller'],
  summary: 'Create an inference key for a customer (secret shown once)',
  security: SESSION_AND_CSRF,
  middleware: [noStore(), requireSession(), requireRole('reseller')] as const,
  request: { params: CustomerIdParam, body: json(CreateKeyRequest) },
  responses: {
    201: jsonContent(dataOf(KeyWithSecret), 'The key and its secret.'),
    ...errorResponses(401, 403, 404, 422),
  },
});

const customerKeyStatusRoute = createRoute({
  method: 'patch',
  path: '/reseller/customers/{id}/api-keys/{keyId}/status',
  tags: ['reseller'],
  summary: "Disable, re-enable or revoke a customer's key",
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('reseller')] as const,
  request: { params: CustomerKeyParams, body: json(KeyStatusChangeRequest) },
  responses: { 200: jsonContent(dataOf(ApiKeyView), 'The key.'), ...errorResponses(401, 403, 404, 422) },
});

const listManagementKeysRoute = createRoute({
  method: 'get',
  path: '/reseller/management-keys',
  tags: ['reseller'],
  summary: 'List your management keys (masked, with last use)',
  security: SESSION,
  middleware: [requireSession(), requireRole('reseller')] as const,
  responses: { 200: jsonContent(dataOf(z.array(ManagementKeyView)), 'Keys.'), ...errorResponses(401, 403) },
});

const createManagementKeyRoute = createRoute({
  method: 'post',
  path: '/reseller/management-keys',
  tags: ['reseller'],
  summary: 'Create a management key with chosen scopes (secret shown once)',
  security: SESSION_AND_CSRF,
  middleware: [noStore(), requireSession(), requireRole('reseller')] as const,
  request: { body: json(CreateManagementKeyRequest) },
  responses: {
    201: jsonContent(dataOf(ManagementKeyWithSecret), 'The key and its secret.'),
    ...errorResponses(401, 403, 422),
  },
});

const revokeManagementKeyRoute = createRoute({
  method: 'delete',
  path: '/reseller/management-keys/{id}',
  tags: ['reseller'],
  summary: 'Revoke a management key (refused from the next request on)',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('reseller')] as const,
  request: { params: KeyIdParam },
  responses: {
    200: jsonContent(dataOf(ManagementKeyView), 'The revoked key.'),
    ...errorResponses(401, 403, 404),
  },
});

/** /reseller: customers' inference keys and the reseller's own management keys. */
export function resellerKeyRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(listCustomerKeysRoute, async (c) => {
    const keys = await listCustomerKeys(c.get('deps'), c.get('auth').account.id, c.req.valid('param').id);
    return c.json({ data: keys.map(toApiKeyView) }, 200);
  });
  app.openapi(createCustomerKeyRoute, async (c) => {
    const created = await createCustomerKey(
      c.get('deps'),
      sessionActor(c),
      c.req.valid('param').id,
      c.req.valid('json'),
    );
    return c.json({ data: { key: toApiKeyView(created.key), secret: created.secret } }, 201);
  });
  app.openapi(customerKeyStatusRoute, async (c) => {
    const { id, keyId } = c.req.valid('param');
    const key = await changeCustomerKeyStatus(
      c.get('deps'),
      sessionActor(c),
      id,
      keyId,
      c.req.valid('json').status,
    );
    return c.json({ data: toApiKeyView(key) }, 200);
  });
  app.openapi(listManagementKeysRoute, async (c) => {
    const keys = await listManagementKeys(c.get('deps'), c.get('auth').account.id);
    return c.json({ data: keys.map(toManagementKeyView) }, 200);
  });
  app.openapi(createManagementKeyRoute, async (c) => {
    const created = await createManagementKey(c.get('deps'), sessionActor(c), c.req.valid('json'));
    return c.json({ data: { key: toManagementKeyView(created.key), secret: created.secret } }, 201);
  });
  app.openapi(revokeManagementKeyRoute, async (c) => {
    const key = await revokeManagementKey(c.get('deps'), sessionActor(c), c.req.valid('param').id);
    return c.json({ data: toManagementKeyView(key) }, 200);
  });
  return app;
}
