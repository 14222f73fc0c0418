import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { INTEGER_STRING } from '@tollgate/schemas';
import { validationHook } from '../../http/errors.ts';
import { sessionActor } from '../../http/management-key.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import { AmountsView, summaryRange, UsageSummaryQuery } from './billing.schemas.ts';
import { listHeld, resolveHold } from './holds.service.ts';
import { reportMargin } from './margin.ts';
import { reportUsageTotals } from './reports.service.ts';
import { reportWriteOffs } from './write-offs.ts';

const HeldView = z
  .object({
    id: z.string().uuid(),
    accountId: z.string().uuid(),
    keyId: z.string().uuid(),
    alias: z.string(),
    surface: z.string(),
    reason: z.string().nullable(),
    reserved: AmountsView,
    createdAt: z.string(),
    heldAt: z.string().nullable(),
  })
  .openapi('HeldReservation');

const IntegerString = z.string().regex(INTEGER_STRING.unsigned);
// Instants Postgres can store (JavaScript dates reach far wider).
const ReportTime = z.coerce
  .date()
  .min(new Date('1970-01-01T00:00:00Z'))
  .max(new Date('9999-12-31T23:59:59Z'));
/** The period a report covers, the same on every admin report. */
const ReportPeriod = {
  from: ReportTime.optional().openapi({ description: 'Start (inclusive); default 30 days before `to`.' }),
  to: ReportTime.optional().openapi({ description: 'End (exclusive); default now.' }),
};
const Note = z
  .string()
  .trim()
  .min(1, 'Say why (the reason is kept in the audit log).')
  .max(500)
  .describe('Why: kept in the audit row.');
const ResolveRequest = z
  .discriminatedUnion('action', [
    z.object({
      action: z.literal('settle'),
      note: Note,
      inputTokens: IntegerString.describe('Input tokens read neither from nor into a cache.'),
      outputTokens: IntegerString,
      cacheReadTokens: IntegerString.optional(),
      cacheWriteTokens: IntegerString.optional().describe('Five-minute cache writes.'),
      cacheWrite1hTokens: IntegerString.optional().describe('One-hour cache writes.'),
    }),
    z.object({ action: z.literal('release'), note: Note }),
  ])
  .openapi('ResolveHoldRequest');

const listRoute = createRoute({
  method: 'get',
  path: '/admin/reservations/held',
  tags: ['admin'],
  summary: 'Reservations held for reconciliation (usage unknown)',
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: { query: z.object({ limit: z.coerce.number().int().min(1).max(500).default(100) }) },
  responses: {
    200: jsonContent(dataOf(z.array(HeldView)), 'Held reservations.'),
    ...errorResponses(401, 403),
  },
});

const resolveRoute = createRoute({
  method: 'post',
  path: '/admin/reservations/{id}/resolve',
  tags: ['admin'],
  summary: 'Resolve a hold: settle known usage, or release it',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    params: z.object({ id: z.string().uuid() }),
    body: { required: true, content: { 'application/json': { schema: ResolveRequest } } },
  },
  responses: {
    200: jsonContent(
      dataOf(z.object({ status: z.enum(['reserved', 'settled', 'released', 'held']), charged: AmountsView })),
      'How the reservation ended.',
    ),
    ...errorResponses(401, 403, 404, 422),
  },
});

const WriteOffView = z
  .object({
    accountId: z.string().uuid(),
    alias: z.string(),
    reservations: IntegerString,
    writtenOff: AmountsView,
  })
  .openapi('WriteOffRow');

const writeOffsRoute = createRoute({
  method: 'get',
  path: '/admin/reports/write-offs',
  tags: ['admin'],
  summary: 'Usage written off (beyond what the balance could pay), by account and alias',
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    query: z.object({
      ...ReportPeriod,
      limit: z.coerce.number().int().min(1).max(1000).default(100),
    }),
  },
  responses: {
    200: jsonContent(
      dataOf(z.object({ from: z.string(), to: z.string(), items: z.array(WriteOffView) })),
      'Largest write-offs first.',
    ),
    ...errorResponses(401, 403, 422),
  },
});

const MarginView = z
  .object({
    alias: z.string(),
    providerId: z.string(),
    upstreamModel: z.string(),
    calls: IntegerString,
    usage: z.object({
      inputTokens: IntegerString,
      outputTokens: IntegerString,
      cacheReadTokens: IntegerString,
      cacheWriteTokens: IntegerString,
      cacheWrite1hTokens: IntegerString,
    }),
    revenue: z.object({
      credits: IntegerString,
      tokens: IntegerString.openapi({
        description: 'Package tokens spent (paid when the package was sold).',
      }),
    }),
    costCredits: IntegerString.nullable().openapi({
      description: "The usage at the upstream's cost price as it is now; null: it has none.",
    }),
    marginCredits: z
      .string()
      .nullable()
      .openapi({ description: 'Credits charged minus cost (may be negative).' }),
  })
  .openapi('MarginRow');

const marginRoute = createRoute({
  method: 'get',
  path: '/admin/reports/margin',
  tags: ['admin'],
  summary: "Revenue against the operator's cost, by alias and the upstream that served",
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    query: z.object({
      ...ReportPeriod,
    }),
  },
  responses: {
    200: jsonContent(
      dataOf(z.object({ from: z.string(), to: z.string(), items: z.array(MarginView) })),
      'One row per alias and upstream that settled calls in the period.',
    ),
    ...errorResponses(401, 403, 422),
  },
});

const UsageTotalsView = z
  .object({
    day: z.string().nullable().describe('The day (by day); null otherwise.'),
    accountId: z.string().uuid().nullable().describe('The account (by account or key).'),
    email: z.string().nullable().describe('The account’s email (by account).'),
    keyId: z.string().uuid().nullable().describe('The key (by key).'),
    keyName: z.string().nullable().describe('The key’s name (by key).'),
    requests: IntegerString,
    inputTokens: IntegerString.describe('Input read neither from nor into a cache.'),
    outputTokens: IntegerString,
    charged: AmountsView,
  })
  .openapi('UsageTotalsRow');

const usageRoute = createRoute({
  method: 'get',
  path: '/admin/reports/usage',
  tags: ['admin'],
  summary: 'Settled usage and spend across customers: per day, per customer, or per key of one customer',
  description:
    'Days are each account’s days in its timezone (the one of its spend caps; UTC without one). by=day: one row per day (of every account, or of accountId); by=account: the customers who spent most first; by=key: the keys of accountId, most spent first.',
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    query: UsageSummaryQuery.omit({ by: true }).extend({
      by: z.enum(['day', 'account', 'key']).default('day'),
      accountId: z.string().uuid().optional(),
      limit: z.coerce.number().int().min(1).max(1000).default(100),
    }),
  },
  responses: {
    200: jsonContent(
      dataOf(z.object({ from: z.string(), to: z.string(), items: z.array(UsageTotalsView) })),
      'Usage and spend, integer strings.',
    ),
    ...errorResponses(401, 403, 422),
  },
});

export function holdsRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(listRoute, async (c) =>
    c.json({ data: await listHeld(c.get('deps'), c.req.valid('query').limit) }, 200),
  );
  app.openapi(resolveRoute, async (c) => {
    const body = c.req.valid('json');
    const resolution =
      body.action === 'settle'
        ? {
            action: 'settle' as const,
            inputTokens: BigInt(body.inputTokens),
            outputTokens: BigInt(body.outputTokens),
            cacheReadTokens: BigInt(body.cacheReadTokens ?? '0'),
            cacheWriteTokens: BigInt(body.cacheWriteTokens ?? '0'),
            cacheWrite1hTokens: BigInt(body.cacheWrite1hTokens ?? '0'),
            note: body.note,
          }
        : { action: 'release' as const, note: body.note };
    return c.json(
      { data: await resolveHold(c.get('deps'), c.req.valid('param').id, resolution, sessionActor(c)) },
      200,
    );
  });
  app.openapi(marginRoute, async (c) => {
    const { from, to } = c.req.valid('query');
    return c.json(
      { data: await reportMargin(c.get('deps'), { ...(from ? { from } : {}), ...(to ? { to } : {}) }) },
      200,
    );
  });
  app.openapi(usageRoute, async (c) => {
    const { by, accountId, limit, ...days } = c.req.valid('query');
    const range = summaryRange(days);
    const items = await reportUsageTotals(c.get('deps'), range, { by, accountId: accountId ?? null, limit });
    return c.json({ data: { ...range, items } }, 200);
  });
  app.openapi(writeOffsRoute, async (c) => {
    const { from, to, limit } = c.req.valid('query');
    return c.json(
      {
        data: await reportWriteOffs(c.get('deps'), {
          ...(from ? { from } : {}),
          ...(to ? { to } : {}),
          limit,
        }),
      },
      200,
    );
  });
  return app;
}
