import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import { ApiKeyView, toApiKeyView } from '../api-keys/api-keys.schemas.ts';
import { listKeys } from '../api-keys/api-keys.service.ts';
import { listAudit } from '../audit/audit.service.ts';
import {
  ActivityQuery,
  AdminActivityPage,
  BalanceView,
  EntitlementView,
} from '../billing/billing.schemas.ts';
import { listLedger } from '../billing/ledger-view.ts';
import { listActivity, listEntitlements, readBalance, withRoutes } from '../billing/reports.service.ts';
import { readAccount } from './admin.service.ts';

const AccountIdParam = z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' } }) });
const Limit = z.coerce.number().int().min(1).max(200).default(50);

const LedgerItemView = z
  .object({
    id: z.string(),
    kind: z.string(),
    entitlementId: z.string().nullable().openapi({ description: 'null: the credit balance' }),
    availableDelta: z.string(),
    reservedDelta: z.string(),
    amount: z.string(),
    reservationId: z.string().nullable(),
    cause: z.string(),
    createdAt: z.string(),
  })
  .openapi('LedgerItem');

const AuditEventView = z
  .object({
    id: z.string(),
    action: z.string().openapi({ example: 'reseller.grant' }),
    actor: z.object({
      accountId: z.string().nullable(),
      managementKeyId: z.string().nullable(),
      email: z.string().nullable().openapi({ description: 'The acting account; null for the service.' }),
      managementKeyName: z.string().nullable(),
    }),
    target: z.object({
      type: z.string().nullable(),
      id: z.string().nullable(),
      email: z.string().nullable().openapi({ description: 'The target account’s email, when it is one.' }),
    }),
    detail: z.record(z.string(), z.unknown()),
    ip: z.string().nullable(),
    userAgent: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi('AuditEvent');

function view<T extends z.ZodType>(path: string, summary: string, schema: T) {
  return createRoute({
    method: 'get',
    path,
    tags: ['admin'],
    summary,
    security: SESSION,
    middleware: [requireSession(), requireRole('admin')] as const,
    request: { params: AccountIdParam },
    responses: { 200: jsonContent(dataOf(schema), 'Read-only view.'), ...errorResponses(401, 403, 404, 422) },
  });
}

const keysRoute = view(
  '/admin/accounts/{id}/api-keys',
  "An account's inference keys, masked (admin)",
  z.array(ApiKeyView),
);
const balanceRoute = view('/admin/accounts/{id}/balance', "An account's balance (admin)", BalanceView);
const entitlementsRoute = view(
  '/admin/accounts/{id}/entitlements',
  "An account's entitlements (admin)",
  z.array(EntitlementView),
);
const activityRoute = createRoute({
  method: 'get',
  path: '/admin/accounts/{id}/activity',
  tags: ['admin'],
  summary: "An account's activity, newest first (admin)",
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: { params: AccountIdParam, query: ActivityQuery },
  responses: {
    200: jsonContent(dataOf(AdminActivityPage), 'Activity, with the upstream of each call.'),
    ...errorResponses(401, 403, 404, 422),
  },
});
const ledgerRoute = createRoute({
  method: 'get',
  path: '/admin/accounts/{id}/ledger',
  tags: ['admin'],
  summary: "An account's ledger rows, newest first (admin)",
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    params: AccountIdParam,
    query: z.object({ limit: Limit, cursor: z.string().max(40).optional() }),
  },
  responses: {
    200: jsonContent(
      dataOf(z.object({ items: z.array(LedgerItemView), nextCursor: z.string().nullable() })),
      'Ledger.',
    ),
    ...errorResponses(401, 403, 404, 422),
  },
});
const auditRoute = createRoute({
  method: 'get',
  path: '/admin/audit',
  tags: ['admin'],
  summary: 'The audit log: admin, reseller and management-key actions and key reveals (admin)',
  description: 'Append-only. Newest first; filters combine; pass nextCursor as cursor for the next page.',
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    query: z.object({
      actorAccountId: z.string().uuid().optional(),
      email: z
        .string()
        .max(254)
        .optional()
        .openapi({ description: 'Part of the actor’s or the target account’s email, any letter case.' }),
      targetId: z.string().max(100).optional(),
      action: z.string().max(100).optional(),
      since: z.iso.datetime({ offset: true }).optional(),
      until: z.iso.datetime({ offset: true }).optional(),
      cursor: z.string().max(200).optional(),
      limit: Limit,
    }),
  },
  responses: {
    200: jsonContent(
      dataOf(z.object({ items: z.array(AuditEventView), nextCursor: z.string().nullable() })),
      'Events.',
    ),
    ...errorResponses(401, 403, 422),
  },
});

/** /admin: read-only views of any account, and the audit log. */
export function adminViewRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(keysRoute, async (c) => {
    const account = await readAccount(c.get('deps'), c.req.valid('param').id);
    return c.json({ data: (await listKeys(c.get('deps'), account.id)).map(toApiKeyView) }, 200);
  });
  app.openapi(balanceRoute, async (c) => {
    const account = await readAccount(c.get('deps'), c.req.valid('param').id);
    return c.json({ data: await readBalance(c.get('deps'), account.id) }, 200);
  });
  app.openapi(entitlementsRoute, async (c) => {
    const account = await readAccount(c.get('deps'), c.req.valid('param').id);
    return c.json({ data: await listEntitlements(c.get('deps'), account.id) }, 200);
  });
  app.openapi(activityRoute, async (c) => {
    const account = await readAccount(c.get('deps'), c.req.valid('param').id);
    const query = c.req.valid('query');
    const page = await listActivity(c.get('deps'), account.id, {
      limit: query.limit,
      ...(query.keyId ? { keyId: query.keyId } : {}),
      ...(query.cursor ? { cursor: query.cursor } : {}),
    });
    return c.json({ data: await withRoutes(c.get('deps'), page) }, 200);
  });
  app.openapi(ledgerRoute, async (c) => {
    const account = await readAccount(c.get('deps'), c.req.valid('param').id);
    const query = c.req.valid('query');
    const page = await listLedger(c.get('deps').db, account.id, {
      limit: query.limit,
      ...(query.cursor ? { cursor: query.cursor } : {}),
    });
    return c.json({ data: page }, 200);
  });
  app.openapi(auditRoute, async (c) => {
    const query = c.req.valid('query');
    const page = await listAudit(
      c.get('deps').db,
      Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined)) as typeof query,
    );
    return c.json({ data: page }, 200);
  });
  return app;
}
