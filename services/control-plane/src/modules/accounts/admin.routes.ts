import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { validationHook } from '../../http/errors.ts';
import { sessionActor } from '../../http/management-key.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import { Email } from '../auth/auth.schemas.ts';
import { createAccountForSomeone } from '../auth/password-reset.service.ts';
import { BalanceView, IntegerString } from '../billing/billing.schemas.ts';
import { accountFigures } from '../billing/reports.service.ts';
import type { Mailer } from '../mail/mail.service.ts';
import {
  AccountPageView,
  AccountView,
  DisplayName,
  PageQuery,
  toAccountPageView,
  toAccountView,
} from './accounts.schemas.ts';
import { listAccounts } from './accounts.service.ts';
import {
  adjustAccountCredit,
  changeAccountReseller,
  changeAccountRoles,
  changeAccountStatus,
  grantToAccount,
  readAccount,
} from './admin.service.ts';

const AccountIdParam = z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' } }) });
const Note = z
  .string()
  .trim()
  .min(1, 'Say why (a note is required).')
  .max(500, 'Use at most 500 characters.');
const AccountStatusRequest = z
  .object({ status: z.enum(['active', 'suspended'], 'Use active or suspended.') })
  .openapi('AccountStatusRequest');
const AccountRolesRequest = z
  .object({ admin: z.boolean().optional(), reseller: z.boolean().optional() })
  .refine((body) => body.admin !== undefined || body.reseller !== undefined, {
    message: 'Send admin and/or reseller.',
    path: ['body'],
  })
  .openapi('AccountRolesRequest');
const AccountResellerRequest = z
  .object({
    resellerId: z.string().uuid('Use the id of a reseller account.').nullable().openapi({
      description: 'The reseller to attach this customer to; null detaches it.',
    }),
  })
  .openapi('AccountResellerRequest');
const AdminGrantRequest = z
  .object({
    packageId: z.string().min(1).max(100).optional(),
    credits: z
      .string()
      .regex(/^[1-9][0-9]{0,17}$/, 'Use a positive whole number as a string.')
      .optional(),
    note: Note,
  })
  .refine((body) => (body.packageId === undefined) !== (body.credits === undefined), {
    message: 'Send either packageId or credits.',
    path: ['body'],
  })
  .openapi('AdminGrantRequest');
const CreditAdjustmentRequest = z
  .object({
    amount: z.string().regex(/^-?[1-9][0-9]{0,17}$/, 'Use a non-zero whole number as a string, e.g. "-500".'),
    note: Note,
  })
  .openapi('CreditAdjustmentRequest');
const IdempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .min(1)
    .max(200)
    .optional()
    .openapi({ param: { name: 'idempotency-key', in: 'header' } }),
});
const json = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

const AccountFilters = PageQuery.extend({
  email: z.string().max(254).optional(),
  resellerId: z.string().uuid().optional(),
  status: z.enum(['active', 'suspended']).optional(),
  role: z.enum(['admin', 'reseller']).optional(),
});

const listAccountsRoute = createRoute({
  method: 'get',
  path: '/admin/accounts',
  tags: ['admin'],
  summary: 'Search accounts (admin)',
  description:
    'Newest first. email: part of the address, any letter case; resellerId: that reseller’s customers; status; role (admin or reseller). Filters combine.',
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: { query: AccountFilters },
  responses: {
    200: jsonContent(dataOf(AccountPageView), 'Accounts, newest first.'),
    ...errorResponses(401, 403, 422),
  },
});

const AccountSummaryView = z
  .object({
    account: AccountView,
    balance: BalanceView,
    spent: z
      .object({
        since: z
          .string()
          .openapi({ description: 'The first UTC day counted (YYYY-MM-DD).', example: '2026-01-01' }),
        requests: IntegerString,
        credits: IntegerString,
        tokens: IntegerString.describe('Entitlement tokens drawn.'),
      })
      .describe('What the calls created since that day (today included) charged, once settled.'),
    lastCallAt: z.string().datetime().nullable().describe('The latest metered call; null: none yet.'),
  })
  .openapi('AccountSummary');

const listAccountSummariesRoute = createRoute({
  method: 'get',
  path: '/admin/account-summaries',
  tags: ['admin'],
  summary: 'Accounts with their balance, spend and last call (admin)',
  description:
    'The filters and paging of GET /admin/accounts (newest first; pass nextCursor as after), with each account’s balance, what it spent in the last `days` UTC days (default 30) and the time of its latest call.',
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    query: AccountFilters.extend({ days: z.coerce.number().int().min(1).max(366).default(30) }),
  },
  responses: {
    200: jsonContent(
      dataOf(z.object({ items: z.array(AccountSummaryView), nextCursor: z.string().nullable() })),
      'Accounts, newest first.',
    ),
    ...errorResponses(401, 403, 422),
  },
});

const createAccountRoute = createRoute({
  method: 'post',
  path: '/admin/accounts',
  tags: ['admin'],
  summary: 'Open an account for someone (admin): they are emailed a link to choose a password',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    body: json(z.object({ email: Email, displayName: DisplayName.nullable().optional() }).strict()),
  },
  responses: {
    201: jsonContent(dataOf(AccountView), 'The new account.'),
    ...errorResponses(401, 403, 422),
  },
});

const readAccountRoute = createRoute({
  method: 'get',
  path: '/admin/accounts/{id}',
  tags: ['admin'],
  summary: 'Read an account (admin)',
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: { params: AccountIdParam },
  responses: { 200: jsonContent(dataOf(AccountView), 'The account.'), ...errorResponses(401, 403, 404) },
});

const setStatusRoute = createRoute({
  method: 'patch',
  path: '/admin/accounts/{id}/status',
  tags: ['admin'],
  summary: 'Suspend or reinstate an account (admin)',
  description: 'A suspended account gets account_suspended on every authenticated route and at the gateway.',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: { params: AccountIdParam, body: json(AccountStatusRequest) },
  responses: { 200: jsonContent(dataOf(AccountView), 'The account.'), ...errorResponses(401, 403, 404, 422) },
});

const setRolesRoute = createRoute({
  method: 'patch',
  path: '/admin/accounts/{id}/roles',
  tags: ['admin'],
  summary: 'Set or clear the admin and reseller permissions (admin)',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: { params: AccountIdParam, body: json(AccountRolesRequest) },
  responses: { 200: jsonContent(dataOf(AccountView), 'The account.'), ...errorResponses(401, 403, 404, 422) },
});

const setResellerRoute = createRoute({
  method: 'put',
  path: '/admin/accounts/{id}/reseller',
  tags: ['admin'],
  summary: 'Attach a customer to a reseller, or detach it (admin)',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: { params: AccountIdParam, body: json(AccountResellerRequest) },
  responses: { 200: jsonContent(dataOf(AccountView), 'The account.'), ...errorResponses(401, 403, 404, 422) },
});

const grantRoute = createRoute({
  method: 'post',
  path: '/admin/accounts/{id}/grants',
  tags: ['admin'],
  summary: 'Grant a package or credit to an account, with a required note (admin)',
  description:
    'With Idempotency-Key a grant (package or credit) is made once: a repeat answers replay: true (and the ' +
    'first entitlement of a package grant) and grants nothing; the key reused for another grant is 422.',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: { params: AccountIdParam, headers: IdempotencyHeaders, body: json(AdminGrantRequest) },
  responses: {
    201: jsonContent(
      dataOf(z.object({ entitlementId: z.string().nullable(), replay: z.boolean() }).openapi('AdminGrant')),
      'Granted.',
    ),
    ...errorResponses(401, 403, 404, 422),
  },
});

const adjustRoute = createRoute({
  method: 'post',
  path: '/admin/accounts/{id}/credit-adjustments',
  tags: ['admin'],
  summary: 'Correct an account’s credit by a signed amount, with a required note (admin)',
  description:
    'Never below zero (validation_failed). With Idempotency-Key the adjustment is made once: a repeat ' +
    'answers replay: true and changes nothing; the key reused for another amount or account is 422.',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: { params: AccountIdParam, headers: IdempotencyHeaders, body: json(CreditAdjustmentRequest) },
  responses: {
    201: jsonContent(
      dataOf(z.object({ adjusted: z.string(), replay: z.boolean() }).openapi('CreditAdjustment')),
      'Adjusted.',
    ),
    ...errorResponses(401, 403, 404, 422),
  },
});

/** /admin/accounts: search, read and change accounts; forbidden without the admin permission. */
export function adminRoutes(mailer: Mailer) {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(listAccountsRoute, async (c) => {
    const page = await listAccounts(c.get('deps').db, c.req.valid('query'));
    return c.json({ data: toAccountPageView(page) }, 200);
  });
  app.openapi(listAccountSummariesRoute, async (c) => {
    const deps = c.get('deps');
    const { days, ...filters } = c.req.valid('query');
    const page = await listAccounts(deps.db, filters);
    const figures = await accountFigures(
      deps,
      page.items.map((account) => account.id),
      days,
    );
    const items = page.items.map((account) => ({
      account: toAccountView(account),
      ...figures.get(account.id)!,
    }));
    return c.json({ data: { items, nextCursor: page.nextCursor } }, 200);
  });
  app.openapi(createAccountRoute, async (c) => {
    const deps = c.get('deps');
    const body = c.req.valid('json');
    const account = await createAccountForSomeone(deps, mailer, sessionActor(c), {
      email: body.email,
      displayName: body.displayName ?? null,
    });
    return c.json({ data: toAccountView(account) }, 201);
  });
  app.openapi(readAccountRoute, async (c) => {
    const account = await readAccount(c.get('deps'), c.req.valid('param').id);
    return c.json({ data: toAccountView(account) }, 200);
  });
  app.openapi(setStatusRoute, async (c) => {
    const actor = { ...sessionActor(c), account: c.get('auth').account };
    const account = await changeAccountStatus(
      c.get('deps'),
      actor,
      c.req.valid('param').id,
      c.req.valid('json').status,
    );
    return c.json({ data: toAccountView(account) }, 200);
  });
  app.openapi(setRolesRoute, async (c) => {
    const account = await changeAccountRoles(
      c.get('deps'),
      sessionActor(c),
      c.req.valid('param').id,
      c.req.valid('json'),
    );
    return c.json({ data: toAccountView(account) }, 200);
  });
  app.openapi(setResellerRoute, async (c) => {
    const { resellerId } = c.req.valid('json');
    const account = await changeAccountReseller(
      c.get('deps'),
      sessionActor(c),
      c.req.valid('param').id,
      resellerId,
    );
    return c.json({ data: toAccountView(account) }, 200);
  });
  app.openapi(grantRoute, async (c) => {
    const body = c.req.valid('json');
    const grant =
      body.credits !== undefined
        ? { credits: BigInt(body.credits) }
        : { packageId: body.packageId as string };
    const result = await grantToAccount(
      c.get('deps'),
      sessionActor(c),
      c.req.valid('param').id,
      grant,
      body.note,
      c.req.valid('header')['idempotency-key'] ?? null,
    );
    return c.json({ data: result }, 201);
  });
  app.openapi(adjustRoute, async (c) => {
    const body = c.req.valid('json');
    const { replay } = await adjustAccountCredit(
      c.get('deps'),
      sessionActor(c),
      c.req.valid('param').id,
      BigInt(body.amount),
      body.note,
      c.req.valid('header')['idempotency-key'] ?? null,
    );
    return c.json({ data: { adjusted: body.amount, replay } }, 201);
  });
  return app;
}
