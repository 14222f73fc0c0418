import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { clientAddressOf, userAgentOf } from '../../http/client-address.ts';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireSession, type SessionEnv } from '../../http/session.ts';
import {
  ApiKeyView,
  CreateKeyRequest,
  KeyIdParam,
  KeyStatusChangeRequest,
  KeyStatusView,
  KeyWithSecret,
  RevealedKey,
  toApiKeyView,
} from './api-keys.schemas.ts';
import { changeKeyStatus, createKey, listKeys, readKeyStatus, rotateKey } from './api-keys.service.ts';
import { revealKey } from './key-reveal.service.ts';

/** Answers that may carry a secret are never stored by a browser or proxy, errors included. */
function noStore(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    c.res.headers.set('Cache-Control', 'no-store');
  };
}

const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

const listRoute = createRoute({
  method: 'get',
  path: '/me/api-keys',
  tags: ['api-keys'],
  summary: 'List your inference keys (always masked)',
  security: SESSION,
  middleware: [requireSession()] as const,
  responses: {
    200: jsonContent(dataOf(z.array(ApiKeyView)), 'Keys, newest first.'),
    ...errorResponses(401, 403),
  },
});

const createKeyRoute = createRoute({
  method: 'post',
  path: '/me/api-keys',
  tags: ['api-keys'],
  summary: 'Create an inference key; the secret is returned once',
  security: SESSION_AND_CSRF,
  middleware: [noStore(), requireSession()] as const,
  request: { body: jsonBody(CreateKeyRequest) },
  responses: {
    201: jsonContent(dataOf(KeyWithSecret), 'The key and its secret.'),
    ...errorResponses(401, 403, 422),
  },
});

const rotateRoute = createRoute({
  method: 'post',
  path: '/me/api-keys/{id}/rotate',
  tags: ['api-keys'],
  summary: 'Rotate a key: new secret, the previous one stops working at once',
  description: 'A revoked key cannot be rotated (forbidden).',
  security: SESSION_AND_CSRF,
  middleware: [noStore(), requireSession()] as const,
  request: { params: KeyIdParam },
  responses: {
    200: jsonContent(dataOf(KeyWithSecret), 'The key and its new secret.'),
    ...errorResponses(401, 403, 404),
  },
});

const changeStatusRoute = createRoute({
  method: 'patch',
  path: '/me/api-keys/{id}/status',
  tags: ['api-keys'],
  summary: 'Disable, re-enable or revoke a key',
  description:
    'active <-> disabled; any -> revoked (permanent). Re-enabling or disabling a revoked key is ' +
    'forbidden (403). Expired is derived from expiresAt and cannot be set.',
  security: SESSION_AND_CSRF,
  middleware: [requireSession()] as const,
  request: { params: KeyIdParam, body: jsonBody(KeyStatusChangeRequest) },
  responses: { 200: jsonContent(dataOf(ApiKeyView), 'The key.'), ...errorResponses(401, 403, 404, 422) },
});

const readStatusRoute = createRoute({
  method: 'get',
  path: '/me/api-keys/{id}/status',
  tags: ['api-keys'],
  summary: 'Validate a key: state, scope, ceilings and remaining balance (spends nothing)',
  security: SESSION,
  middleware: [requireSession()] as const,
  request: { params: KeyIdParam },
  responses: { 200: jsonContent(dataOf(KeyStatusView), 'Key status.'), ...errorResponses(401, 403, 404) },
});

const revealRoute = createRoute({
  method: 'post',
  path: '/me/api-keys/{id}/reveal',
  tags: ['api-keys'],
  summary: 'Copy key: reveal the current secret of your key',
  description:
    'Throttled per account (rate_limit_exceeded with Retry-After) and audited, refusals included. ' +
    'Keys created before re-copy support, and revoked keys, are forbidden until rotated. ' +
    'Answers carry Cache-Control: no-store.',
  security: SESSION_AND_CSRF,
  middleware: [noStore(), requireSession()] as const,
  request: { params: KeyIdParam },
  responses: { 200: jsonContent(dataOf(RevealedKey), 'The secret.'), ...errorResponses(401, 403, 404, 429) },
});

export function apiKeyRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });

  app.openapi(listRoute, async (c) => {
    const keys = await listKeys(c.get('deps'), c.get('auth').account.id);
    return c.json({ data: keys.map(toApiKeyView) }, 200);
  });

  app.openapi(createKeyRoute, async (c) => {
    const created = await createKey(c.get('deps'), c.get('auth').account.id, c.req.valid('json'), {
      chosenByCustomer: true,
    });
    return c.json({ data: { key: toApiKeyView(created.key), secret: created.secret } }, 201);
  });

  app.openapi(rotateRoute, async (c) => {
    const rotated = await rotateKey(c.get('deps'), c.get('auth').account.id, c.req.valid('param').id);
    return c.json({ data: { key: toApiKeyView(rotated.key), secret: rotated.secret } }, 200);
  });

  app.openapi(changeStatusRoute, async (c) => {
    const { id } = c.req.valid('param');
    const key = await changeKeyStatus(
      c.get('deps'),
      c.get('auth').account.id,
      id,
      c.req.valid('json').status,
    );
    return c.json({ data: toApiKeyView(key) }, 200);
  });

  app.openapi(readStatusRoute, async (c) => {
    const status = await readKeyStatus(c.get('deps'), c.get('auth').account.id, c.req.valid('param').id);
    return c.json({ data: status }, 200);
  });

  app.openapi(revealRoute, async (c) => {
    const deps = c.get('deps');
    const auth = c.get('auth');
    const caller = {
      accountId: auth.account.id,
      sessionId: auth.session.id,
      ip: clientAddressOf(c, deps.config.trustProxy),
      userAgent: userAgentOf(c),
    };
    const revealed = await revealKey(deps, caller, c.req.valid('param').id);
    return c.json({ data: { id: revealed.keyId, secret: revealed.secret } }, 200);
  });

  return app;
}
