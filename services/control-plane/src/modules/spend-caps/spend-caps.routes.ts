import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { validationHook } from '../../http/errors.ts';
import {
  type ManagementEnv,
  managementActor,
  requireManagementKey,
  sessionActor,
} from '../../http/management-key.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { managementKey, SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import { changeCap, listCaps } from './spend-caps.access.ts';
import {
  CapTimeZoneRequest,
  SetSpendCapRequest,
  SpendCapsView,
  toSpendCapsView,
} from './spend-caps.schemas.ts';
import { readCapStatus, setCapTimeZone } from './spend-caps.service.ts';

const json = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});
const AccountParam = z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' } }) });
const capsResponse = (description: string) => jsonContent(dataOf(SpendCapsView), description);
const CAPS_DOC =
  'Each cap bounds what calls may count per window (docs/billing/spend-caps.md); every cap on a key ' +
  'and on its account applies. A call over one is refused with 429 rate_limit_exceeded.';
const SET_DOC =
  'Sets your cap of this unit and period on the account or one of its keys (limit null removes it). ' +
  'A cap of the same unit and period set by a higher party (reseller, then admin) bounds it: above it ' +
  'is validation_failed.';

const myCaps = createRoute({
  method: 'get',
  path: '/me/spend-caps',
  tags: ['spend-caps'],
  summary: 'Spend caps on your account and keys, with what each has used',
  description: CAPS_DOC,
  security: SESSION,
  middleware: [requireSession()] as const,
  responses: { 200: capsResponse('Caps.'), ...errorResponses(401, 403) },
});

const mySet = createRoute({
  method: 'put',
  path: '/me/spend-caps',
  tags: ['spend-caps'],
  summary: 'Set or remove a spend cap on your account or one of your keys',
  description: SET_DOC,
  security: SESSION_AND_CSRF,
  middleware: [requireSession()] as const,
  request: { body: json(SetSpendCapRequest) },
  responses: { 200: capsResponse('Caps.'), ...errorResponses(401, 403, 404, 422) },
});

const myTimeZone = createRoute({
  method: 'patch',
  path: '/me/spend-caps',
  tags: ['spend-caps'],
  summary: 'Choose the timezone of your calendar cap windows (day, week, month)',
  security: SESSION_AND_CSRF,
  middleware: [requireSession()] as const,
  request: { body: json(CapTimeZoneRequest) },
  responses: { 200: capsResponse('Caps, in the new timezone.'), ...errorResponses(401, 403, 422) },
});

function sessionRoutes(prefix: '/reseller/customers' | '/admin/accounts', role: 'reseller' | 'admin') {
  const who = role === 'reseller' ? "a customer's" : "an account's";
  return {
    list: createRoute({
      method: 'get',
      path: `${prefix}/{id}/spend-caps`,
      tags: [role],
      summary: `Spend caps on ${who} account and keys`,
      description: CAPS_DOC,
      security: SESSION,
      middleware: [requireSession(), requireRole(role)] as const,
      request: { params: AccountParam },
      responses: { 200: capsResponse('Caps.'), ...errorResponses(401, 403, 404) },
    }),
    set: createRoute({
      method: 'put',
      path: `${prefix}/{id}/spend-caps`,
      tags: [role],
      summary: `Set or remove a spend cap on ${who} account or one of its keys`,
      description: SET_DOC,
      security: SESSION_AND_CSRF,
      middleware: [requireSession(), requireRole(role)] as const,
      request: { params: AccountParam, body: json(SetSpendCapRequest) },
      responses: { 200: capsResponse('Caps.'), ...errorResponses(401, 403, 404, 422) },
    }),
  };
}

const management = {
  list: createRoute({
    method: 'get',
    path: '/reseller-management/customers/{id}/spend-caps',
    tags: ['reseller-management'],
    summary: "Spend caps on a customer's account and keys (scope customers:read)",
    description: CAPS_DOC,
    security: managementKey('customers:read'),
    middleware: [requireManagementKey('customers:read')] as const,
    request: { params: AccountParam },
    responses: { 200: capsResponse('Caps.'), ...errorResponses(401, 403, 404, 429) },
  }),
  set: createRoute({
    method: 'put',
    path: '/reseller-management/customers/{id}/spend-caps',
    tags: ['reseller-management'],
    summary: "Set or remove a spend cap on a customer's account or key (scope customers:write)",
    description: SET_DOC,
    security: managementKey('customers:write'),
    middleware: [requireManagementKey('customers:write')] as const,
    request: { params: AccountParam, body: json(SetSpendCapRequest) },
    responses: { 200: capsResponse('Caps.'), ...errorResponses(401, 403, 404, 422, 429) },
  }),
};

/** Spend caps: the customer's own, its reseller's and the admin's (session area). */
export function spendCapRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(myCaps, async (c) => {
    const status = await readCapStatus(c.get('deps'), c.get('auth').account.id);
    return c.json({ data: toSpendCapsView(status) }, 200);
  });
  app.openapi(mySet, async (c) => {
    const actor = sessionActor(c);
    const status = await changeCap(c.get('deps'), actor, 'customer', actor.accountId, c.req.valid('json'));
    return c.json({ data: toSpendCapsView(status) }, 200);
  });
  app.openapi(myTimeZone, async (c) => {
    const accountId = c.get('auth').account.id;
    await setCapTimeZone(c.get('deps'), accountId, c.req.valid('json').timeZone);
    return c.json({ data: toSpendCapsView(await readCapStatus(c.get('deps'), accountId)) }, 200);
  });
  for (const [prefix, role] of [
    ['/reseller/customers', 'reseller'],
    ['/admin/accounts', 'admin'],
  ] as const) {
    const routes = sessionRoutes(prefix, role);
    app.openapi(routes.list, async (c) => {
      const status = await listCaps(c.get('deps'), role, c.get('auth').account.id, c.req.valid('param').id);
      return c.json({ data: toSpendCapsView(status) }, 200);
    });
    app.openapi(routes.set, async (c) => {
      const { id } = c.req.valid('param');
      const status = await changeCap(c.get('deps'), sessionActor(c), role, id, c.req.valid('json'));
      return c.json({ data: toSpendCapsView(status) }, 200);
    });
  }
  return app;
}

/** The reseller's software: its customers' caps through the management API. */
export function spendCapManagementRoutes() {
  const app = new OpenAPIHono<ManagementEnv>({ defaultHook: validationHook });
  app.openapi(management.list, async (c) => {
    const { resellerId } = c.get('management');
    const status = await listCaps(c.get('deps'), 'reseller', resellerId, c.req.valid('param').id);
    return c.json({ data: toSpendCapsView(status) }, 200);
  });
  app.openapi(management.set, async (c) => {
    const { id } = c.req.valid('param');
    const status = await changeCap(c.get('deps'), managementActor(c), 'reseller', id, c.req.valid('json'));
    return c.json({ data: toSpendCapsView(status) }, 200);
  });
  return app;
}
