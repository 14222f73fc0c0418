import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import {
  AccountPageView,
  AccountView,
  PageQuery,
  toAccountPageView,
  toAccountView,
} from './accounts.schemas.ts';
import { listAccounts, listResellerCustomers, setAccountStatus } from './accounts.service.ts';

const AccountIdParam = z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' } }) });
const AccountStatusRequest = z
  .object({ status: z.enum(['active', 'suspended'], 'Use active or suspended.') })
  .openapi('AccountStatusRequest');

const listAccountsRoute = createRoute({
  method: 'get',
  path: '/admin/accounts',
  tags: ['admin'],
  summary: 'List accounts (admin)',
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: { query: PageQuery.extend({ email: z.string().max(254).optional() }) },
  responses: {
    200: jsonContent(dataOf(AccountPageView), 'Accounts, newest first.'),
    ...errorResponses(401, 403, 422),
  },
});

const setStatusRoute = createRoute({
  method: 'patch',
  path: '/admin/accounts/{id}/status',
  tags: ['admin'],
  summary: 'Suspend or reinstate an account (admin)',
  description: 'A suspended account gets account_suspended on every authenticated route and at the gateway.',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    params: AccountIdParam,
    body: { required: true, content: { 'application/json': { schema: AccountStatusRequest } } },
  },
  responses: { 200: jsonContent(dataOf(AccountView), 'The account.'), ...errorResponses(401, 403, 404, 422) },
});

const listCustomersRoute = createRoute({
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

/** /admin and /reseller areas: forbidden without the matching permission. */
export function adminAndResellerRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });

  app.openapi(listAccountsRoute, async (c) => {
    const query = c.req.valid('query');
    const page = await listAccounts(c.get('deps').db, query);
    return c.json({ data: toAccountPageView(page) }, 200);
  });

  app.openapi(setStatusRoute, async (c) => {
    const { id } = c.req.valid('param');
    const account = await setAccountStatus(
      c.get('deps'),
      c.get('auth').account,
      id,
      c.req.valid('json').status,
    );
    return c.json({ data: toAccountView(account) }, 200);
  });

  app.openapi(listCustomersRoute, async (c) => {
    const page = await listResellerCustomers(
      c.get('deps').db,
      c.get('auth').account.id,
      c.req.valid('query'),
    );
    return c.json({ data: toAccountPageView(page) }, 200);
  });

  return app;
}
