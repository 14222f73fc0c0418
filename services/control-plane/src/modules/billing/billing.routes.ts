import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION } from '../../http/openapi-security.ts';
import { requireSession, type SessionEnv } from '../../http/session.ts';
import {
  ActivityPage,
  ActivityQuery,
  BalanceView,
  EntitlementView,
  ReceiptView,
  summaryRange,
  UsageSummaryQuery,
  UsageSummaryRowView,
} from './billing.schemas.ts';
import { readCallReceipt } from './receipts.service.ts';
import { listActivity, listEntitlements, readBalance, summarizeUsage } from './reports.service.ts';

const balanceRoute = createRoute({
  tags: ['billing'],
  security: SESSION,
  middleware: [requireSession()] as const,
  method: 'get',
  path: '/me/balance',
  summary: 'Token quota and credit: spendable and reserved',
  responses: { 200: jsonContent(dataOf(BalanceView), 'The balance.'), ...errorResponses(401, 403) },
});

const entitlementsRoute = createRoute({
  tags: ['billing'],
  security: SESSION,
  middleware: [requireSession()] as const,
  method: 'get',
  path: '/me/entitlements',
  summary: 'Token entitlements granted by packages',
  responses: {
    200: jsonContent(dataOf(z.array(EntitlementView)), 'Entitlements.'),
    ...errorResponses(401, 403),
  },
});

const activityRoute = createRoute({
  tags: ['billing'],
  security: SESSION,
  middleware: [requireSession()] as const,
  method: 'get',
  path: '/me/activity',
  summary: 'Each metered call, newest first (paginated, filterable by key)',
  request: { query: ActivityQuery },
  responses: {
    200: jsonContent(dataOf(ActivityPage), 'A page of activity.'),
    ...errorResponses(401, 403, 422),
  },
});

const receiptRoute = createRoute({
  tags: ['billing'],
  security: SESSION,
  middleware: [requireSession()] as const,
  method: 'get',
  path: '/me/activity/{id}',
  summary: "One call's receipt: usage parts, prices, what each entitlement or the credit gave, state",
  request: {
    params: z.object({
      id: z
        .string()
        .uuid()
        .openapi({ param: { name: 'id', in: 'path' } }),
    }),
  },
  responses: {
    200: jsonContent(dataOf(ReceiptView), 'The receipt.'),
    ...errorResponses(401, 403, 404, 422),
  },
});

const summaryRoute = createRoute({
  tags: ['billing'],
  security: SESSION,
  middleware: [requireSession()] as const,
  method: 'get',
  path: '/me/usage/summary',
  summary:
    'Settled usage in its parts per day and alias (or key) within a date range (default: the last 30 days); days in the account’s timezone (the one of its spend caps; UTC without one)',
  request: { query: UsageSummaryQuery },
  responses: {
    200: jsonContent(dataOf(z.array(UsageSummaryRowView)), 'Usage per day and alias.'),
    ...errorResponses(401, 403, 422),
  },
});

export function billingRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(balanceRoute, async (c) =>
    c.json({ data: await readBalance(c.get('deps'), c.get('auth').account.id) }, 200),
  );
  app.openapi(entitlementsRoute, async (c) =>
    c.json({ data: await listEntitlements(c.get('deps'), c.get('auth').account.id) }, 200),
  );
  app.openapi(activityRoute, async (c) => {
    const query = c.req.valid('query');
    const page = await listActivity(c.get('deps'), c.get('auth').account.id, {
      limit: query.limit,
      ...(query.keyId ? { keyId: query.keyId } : {}),
      ...(query.cursor ? { cursor: query.cursor } : {}),
    });
    return c.json({ data: page }, 200);
  });
  app.openapi(receiptRoute, async (c) =>
    c.json(
      {
        data: await readCallReceipt(
          c.get('deps'),
          { accountId: c.get('auth').account.id },
          c.req.valid('param').id,
        ),
      },
      200,
    ),
  );
  app.openapi(summaryRoute, async (c) =>
    c.json(
      {
        data: await summarizeUsage(
          c.get('deps'),
          c.get('auth').account.id,
          summaryRange(c.req.valid('query')),
          c.req.valid('query').by ?? 'alias',
        ),
      },
      200,
    ),
  );
  return app;
}
