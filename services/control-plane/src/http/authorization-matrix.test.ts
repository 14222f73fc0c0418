/**
 * The authorization matrix: every route of GET /api/v1/openapi.json, called by every kind of
 * principal, against ONE table of expected outcomes (RULES, with defaults by path prefix). A route
 * that has neither an entry nor a prefix default fails the test, so new routes must be added.
 */
import { randomUUID } from 'node:crypto';
import { apiKeyDigest } from '@tollgate/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { internalApi, reserveItem, settleItem } from '../../test/billing.ts';
import { createClient, type TestClient } from '../../test/client.ts';
import { createTestContext, type TestContext } from '../../test/context.ts';
import {
  createManagementKey,
  customerOf,
  type Member,
  managementCall,
  member,
  seedCatalog,
} from '../../test/resellers.ts';
import { changeCredit } from '../modules/billing/billing.service.ts';

type Scope =
  | 'customers:read'
  | 'customers:write'
  | 'grants:write'
  | 'usage:read'
  | 'keys:write'
  | 'keys:status';

/**
 * public: no credential needed. session: any signed-in account. owned: a signed-in account, on the
 * object ids of customer A (everyone else gets not_found). admin / reseller: that permission.
 * reseller-owned: the reseller R, on the ids of its customer (other resellers get not_found).
 * management: a management key holding that scope, on R's customer (other resellers': not_found).
 */
type Rule =
  | { kind: 'public' }
  | { kind: 'session' }
  | { kind: 'owned' }
  | { kind: 'admin' }
  | { kind: 'reseller' }
  | { kind: 'reseller-owned' }
  | { kind: 'management'; scope: Scope; owned: boolean };

const PUBLIC: Rule = { kind: 'public' };
const SESSION: Rule = { kind: 'session' };
const OWNED: Rule = { kind: 'owned' };
const mk = (scope: Scope, owned = true): Rule => ({ kind: 'management', scope, owned });

/** The one table. Add one line per new route (unless a prefix default below fits). */
const RULES: Record<string, Rule> = {
  'GET /health': PUBLIC,
  'GET /livez': PUBLIC,
  'GET /readyz': PUBLIC,
  'GET /status': PUBLIC,
  'GET /catalog/models': PUBLIC,
  'GET /catalog/packages': PUBLIC,
  'GET /catalog/credit': PUBLIC,
  'POST /auth/register/code': PUBLIC,
  'POST /auth/register': PUBLIC,
  'POST /auth/login': PUBLIC,
  'POST /auth/forgot-password': PUBLIC,
  'POST /auth/reset-password': PUBLIC,
  'POST /auth/accept-invitation': PUBLIC,
  'POST /auth/logout': SESSION,
  'GET /me': SESSION,
  'PATCH /me': SESSION,
  'GET /me/reseller': SESSION,
  'DELETE /me/reseller': SESSION,
  'POST /me/password': SESSION,
  'GET /me/sessions': SESSION,
  'DELETE /me/sessions/{id}': OWNED,
  'GET /me/two-factor': SESSION,
  'POST /me/two-factor/enrol': SESSION,
  'POST /me/two-factor/confirm': SESSION,
  'POST /me/two-factor/disable': SESSION,
  'GET /me/email-settings': SESSION,
  'PATCH /me/email-settings': SESSION,
  'GET /me/balance': SESSION,
  'GET /me/entitlements': SESSION,
  'GET /me/activity': SESSION,
  'GET /me/activity/{id}': OWNED,
  'GET /me/usage/summary': SESSION,
  'GET /me/api-keys': SESSION,
  'GET /me/api-keys/limits': SESSION,
  'POST /me/api-keys': SESSION,
  'POST /me/api-keys/{id}/rotate': OWNED,
  'PATCH /me/api-keys/{id}/status': OWNED,
  'GET /me/api-keys/{id}/status': OWNED,
  'POST /me/api-keys/{id}/reveal': OWNED,
  'GET /me/spend-caps': SESSION,
  'PUT /me/spend-caps': SESSION,
  'PATCH /me/spend-caps': SESSION,
  'GET /orders': SESSION,
  'POST /orders': SESSION,
  'POST /top-ups': SESSION,
  'GET /me/auto-top-up': SESSION,
  'PUT /me/auto-top-up': SESSION,
  'DELETE /me/auto-top-up/card': SESSION,
  'GET /orders/{id}': OWNED,
  'POST /orders/{id}/cancel': OWNED,
  'GET /orders/{id}/payment': OWNED,
  'POST /orders/{id}/payment': OWNED,
  'POST /orders/{id}/payment/verify': OWNED,
  'POST /promotions/preview': SESSION,
  'POST /payments/stripe/webhook': PUBLIC,
  'GET /reseller/customers': { kind: 'reseller' },
  'POST /reseller/customers': { kind: 'reseller' },
  'GET /reseller/management-keys': { kind: 'reseller' },
  'POST /reseller/management-keys': { kind: 'reseller' },
  'GET /reseller-management/customers': mk('customers:read', false),
  'POST /reseller-management/customers': mk('customers:write', false),
  'GET /reseller-management/invitations': mk('customers:read', false),
  'POST /reseller-management/customers/{id}/grants': mk('grants:write'),
  'GET /reseller-management/customers/{id}/usage': mk('usage:read'),
  'POST /reseller-management/customers/{id}/api-keys': mk('keys:write'),
  'PATCH /reseller-management/customers/{id}/api-keys/{keyId}/status': mk('keys:status'),
  'GET /reseller-management/customers/{id}/spend-caps': mk('customers:read'),
  'PUT /reseller-management/customers/{id}/spend-caps': mk('customers:write'),
};

/**
 * Valid bodies for routes that name another's record, so ownership (not_found) is what decides,
 * not validation. Every other state-changing call sends {}.
 */
const CAP_BODY = { keyId: null, unit: 'credits', period: 'day', limit: null };
const SAMPLE_BODIES: Record<string, unknown> = {
  'PATCH /me/api-keys/{id}/status': { status: 'active' },
  'POST /reseller/customers/{id}/grants': { credits: '1' },
  'POST /reseller/customers/{id}/api-keys': { name: 'matrix' },
  'PATCH /reseller/customers/{id}/api-keys/{keyId}/status': { status: 'active' },
  'POST /reseller-management/customers/{id}/grants': { credits: '1' },
  'POST /reseller-management/customers/{id}/api-keys': { name: 'matrix' },
  'PATCH /reseller-management/customers/{id}/api-keys/{keyId}/status': { status: 'active' },
  'PATCH /me/spend-caps': { timeZone: 'UTC' },
  'PUT /me/spend-caps': CAP_BODY,
  'PUT /reseller/customers/{id}/spend-caps': CAP_BODY,
  'PUT /reseller-management/customers/{id}/spend-caps': CAP_BODY,
  'PUT /admin/accounts/{id}/spend-caps': CAP_BODY,
};

/** Defaults by prefix: the whole /admin area is admin-only; /reseller ids belong to the reseller. */
function ruleOf(method: string, path: string): Rule | undefined {
  const explicit = RULES[`${method} ${path}`];
  if (explicit) return explicit;
  if (path.startsWith('/admin/')) return { kind: 'admin' };
  if (path.startsWith('/reseller/')) return { kind: path.includes('{') ? 'reseller-owned' : 'reseller' };
  return undefined;
}

const SCOPES: Scope[] = [
  'customers:read',
  'customers:write',
  'grants:write',
  'usage:read',
  'keys:write',
  'keys:status',
];
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

type Principal =
  | { name: string; kind: 'none' }
  | {
      name: string;
      kind: 'session';
      client: TestClient;
      role: 'A' | 'B' | 'R' | 'R2' | 'admin' | 'suspended';
    }
  | { name: string; kind: 'management'; secret: string; scopes: Scope[]; of: 'R' | 'R2'; live: boolean }
  | { name: string; kind: 'inference'; secret: string; header: 'authorization' | 'x-api-key' };

interface Operation {
  security?: Array<Record<string, string[]>>;
}

let context: TestContext;
let principals: Principal[];
let ids: Record<string, string>;
let customerA: Member;

beforeAll(async () => {
  context = await createTestContext('authz-matrix', { TRUST_PROXY: 'true' });
  await seedCatalog(context);
  customerA = await member(context, 'matrix-a');
  const customerB = await member(context, 'matrix-b');
  const reseller = await member(context, 'matrix-r', { reseller: true });
  const otherReseller = await member(context, 'matrix-r2', { reseller: true });
  const admin = await member(context, 'matrix-admin', { admin: true });
  const suspended = await member(context, 'matrix-suspended');
  await admin.request('PATCH', `/admin/accounts/${suspended.id}/status`, { body: { status: 'suspended' } });

  const inferenceKey = await customerA.request('POST', '/me/api-keys', { body: { name: 'calls' } });
  const pathKey = await customerA.request('POST', '/me/api-keys', { body: { name: 'path ids' } });
  const secondLogin = createClient(context);
  await secondLogin.logIn(customerA.email, customerA.password);
  const sessions = await customerA.request('GET', '/me/sessions');
  const otherSession = sessions.body.data.find((session: { current: boolean }) => !session.current);

  const orderA = await customerA.request('POST', '/orders', { body: { packageId: 'small' } });
  // A payment to read: its owner must get it, not not_found.
  await customerA.request('POST', `/orders/${orderA.body.data.id}/payment`);
  const customerC = await customerOf(context, reseller, 'matrix-c');
  const keyC = await reseller.request('POST', `/reseller/customers/${customerC}/api-keys`, {
    body: { name: 'c' },
  });
  const spare = await createManagementKey(reseller, ['customers:read'], { name: 'spare' });
  // A call of A's, for its receipt.
  await changeCredit(context.deps, {
    accountId: customerA.id,
    amount: 1000n,
    kind: 'grant',
    cause: 'matrix',
  });
  const caller = {
    accountId: customerA.id,
    email: customerA.email,
    keyId: inferenceKey.body.data.key.id,
    secret: inferenceKey.body.data.secret,
    digest: apiKeyDigest(inferenceKey.body.data.secret),
  };
  const call = reserveItem(caller, 'priced', 1n, 1n);
  const internal = internalApi(context);
  await internal.reserve([call]);
  await internal.finish([settleItem(caller, call.reservationId, 'priced', 1n, 1n)]);
  ids = {
    A: customerA.id,
    keyA: pathKey.body.data.key.id,
    sessionA: otherSession.id,
    orderA: orderA.body.data.id,
    callA: call.reservationId,
    C: customerC,
    keyC: keyC.body.data.key.id,
    spareManagementKey: spare.id,
  };

  const revoked = await createManagementKey(reseller, SCOPES);
  await reseller.request('DELETE', `/reseller/management-keys/${revoked.id}`);
  const expiring = await createManagementKey(reseller, SCOPES, {
    expiresAt: new Date(context.clock.now().getTime() + 60_000).toISOString(),
  });
  const singles = await Promise.all(SCOPES.map((scope) => createManagementKey(reseller, [scope])));
  const otherResellerKey = await createManagementKey(otherReseller, SCOPES);
  context.clock.advance(61_000);

  principals = [
    { name: 'no credential', kind: 'none' },
    { name: 'customer', kind: 'session', client: customerA, role: 'A' },
    { name: 'another customer', kind: 'session', client: customerB, role: 'B' },
    { name: 'reseller', kind: 'session', client: reseller, role: 'R' },
    { name: 'another reseller', kind: 'session', client: otherReseller, role: 'R2' },
    ...singles.map(
      (key, index): Principal => ({
        name: `management key ${SCOPES[index]}`,
        kind: 'management',
        secret: key.secret,
        scopes: [SCOPES[index] as Scope],
        of: 'R',
        live: true,
      }),
    ),
    {
      name: 'management key of another reseller',
      kind: 'management',
      secret: otherResellerKey.secret,
      scopes: SCOPES,
      of: 'R2',
      live: true,
    },
    {
      name: 'revoked management key',
      kind: 'management',
      secret: revoked.secret,
      scopes: SCOPES,
      of: 'R',
      live: false,
    },
    {
      name: 'expired management key',
      kind: 'management',
      secret: expiring.secret,
      scopes: SCOPES,
      of: 'R',
      live: false,
    },
    { name: 'admin', kind: 'session', client: admin, role: 'admin' },
    { name: 'suspended account', kind: 'session', client: suspended, role: 'suspended' },
    {
      name: 'inference key (Bearer)',
      kind: 'inference',
      secret: inferenceKey.body.data.secret,
      header: 'authorization',
    },
    {
      name: 'inference key (x-api-key)',
      kind: 'inference',
      secret: inferenceKey.body.data.secret,
      header: 'x-api-key',
    },
  ];
}, 120_000);
afterAll(() => context.close());

/** A concrete path: each {param} replaced by a fixture id of the right owner. */
function concrete(path: string): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (path.startsWith('/me/api-keys/')) return ids.keyA as string;
    if (path.startsWith('/me/sessions/')) return ids.sessionA as string;
    if (path.startsWith('/me/activity/')) return ids.callA as string;
    if (path.startsWith('/orders/')) return ids.orderA as string;
    if (path.startsWith('/reseller/management-keys/')) return ids.spareManagementKey as string;
    if (path.startsWith('/reseller')) return (name === 'keyId' ? ids.keyC : ids.C) as string;
    if (path.startsWith('/admin/accounts/')) return ids.A as string;
    if (path.startsWith('/admin/catalog/aliases/')) return 'priced';
    if (path.startsWith('/admin/catalog/providers/')) return 'up-openai';
    if (path.startsWith('/admin/catalog/packages/')) return 'small';
    return randomUUID();
  });
}

type Expected = 'allowed' | { status: number; code: string };
const UNAUTHENTICATED = { status: 401, code: 'unauthenticated' };
const FORBIDDEN = { status: 403, code: 'forbidden' };
const SUSPENDED = { status: 403, code: 'account_suspended' };
const NOT_FOUND = { status: 404, code: 'not_found' };

function expectedFor(rule: Rule, principal: Principal): Expected {
  // Inference keys are refused everywhere on the control plane; management keys outside their area.
  if (principal.kind === 'inference') return UNAUTHENTICATED;
  if (rule.kind === 'management') {
    if (principal.kind !== 'management' || !principal.live) return UNAUTHENTICATED;
    if (!principal.scopes.includes(rule.scope)) return FORBIDDEN;
    return rule.owned && principal.of !== 'R' ? NOT_FOUND : 'allowed';
  }
  if (principal.kind === 'management') return UNAUTHENTICATED;
  if (rule.kind === 'public') return 'allowed';
  if (principal.kind === 'none') return UNAUTHENTICATED;
  if (principal.role === 'suspended') return SUSPENDED;
  switch (rule.kind) {
    case 'session':
      return 'allowed';
    case 'owned':
      return principal.role === 'A' ? 'allowed' : NOT_FOUND;
    case 'admin':
      return principal.role === 'admin' ? 'allowed' : FORBIDDEN;
    case 'reseller':
      return principal.role === 'R' || principal.role === 'R2' ? 'allowed' : FORBIDDEN;
    case 'reseller-owned':
      return principal.role === 'R' ? 'allowed' : principal.role === 'R2' ? NOT_FOUND : FORBIDDEN;
  }
}

async function call(
  principal: Principal,
  method: string,
  template: string,
  options: { csrf?: boolean } = {},
) {
  const body = STATE_CHANGING.has(method) ? (SAMPLE_BODIES[`${method} ${template}`] ?? {}) : undefined;
  const path = concrete(template);
  switch (principal.kind) {
    case 'none':
      return managementCall(context, null, method, path, { body });
    case 'session':
      return principal.client.request(method, path, {
        ...(body ? { body } : {}),
        csrf: options.csrf ?? true,
      });
    case 'management':
      return managementCall(context, principal.secret, method, path, { body });
    case 'inference':
      return principal.header === 'authorization'
        ? managementCall(context, principal.secret, method, path, { body })
        : managementCall(context, null, method, path, { body, headers: { 'x-api-key': principal.secret } });
  }
}

async function documentedRoutes() {
  const response = await context.publicApp.request('/api/v1/openapi.json');
  const document = (await response.json()) as { paths: Record<string, Record<string, Operation>> };
  const routes = Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({
      method: method.toUpperCase(),
      path: path.replace(/^\/api\/v1/, ''),
      operation,
    })),
  );
  // Logging out ends the caller's session: last.
  return routes.sort((a, b) => Number(a.path === '/auth/logout') - Number(b.path === '/auth/logout'));
}

describe('authorization matrix over GET /api/v1/openapi.json', () => {
  it('has an expected outcome for every documented route, and the document states the credential', async () => {
    const routes = await documentedRoutes();
    expect(routes.length).toBeGreaterThan(40);
    const missing = routes
      .filter((route) => !ruleOf(route.method, route.path))
      .map((r) => `${r.method} ${r.path}`);
    expect(missing, 'routes without an entry in RULES').toEqual([]);
    for (const { method, path, operation } of routes) {
      const rule = ruleOf(method, path) as Rule;
      const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
      const label = `${method} ${path}`;
      if (rule.kind === 'public') expect(schemes, label).not.toContain('managementKey');
      else if (rule.kind === 'management')
        expect(operation.security, label).toEqual([{ managementKey: [rule.scope] }]);
      else {
        expect(schemes, label).toContain('sessionCookie');
        if (STATE_CHANGING.has(method)) expect(schemes, label).toContain('csrfToken');
      }
    }
  });

  it('refuses every state-changing session route without the CSRF token (403), before anything else', async () => {
    const routes = await documentedRoutes();
    for (const { method, path } of routes) {
      const rule = ruleOf(method, path) as Rule;
      if (!STATE_CHANGING.has(method) || rule.kind === 'public' || rule.kind === 'management') continue;
      const allowed = principals.find(
        (principal) => principal.kind === 'session' && expectedFor(rule, principal) === 'allowed',
      ) as Principal;
      const response = await call(allowed, method, path, { csrf: false });
      expect(response.status, `${method} ${path} without CSRF`).toBe(403);
      expect(response.body.code).toBe('forbidden');
    }
  });

  it('gives every principal exactly its expected outcome on every route', async () => {
    const routes = await documentedRoutes();
    const failures: string[] = [];
    let calls = 0;
    for (const { method, path } of routes) {
      const rule = ruleOf(method, path) as Rule;
      for (const principal of principals) {
        const expected = expectedFor(rule, principal);
        const response = await call(principal, method, path);
        calls += 1;
        const label = `${method} ${path} as ${principal.name}: ${response.status} ${response.body?.code ?? ''}`;
        if (expected === 'allowed') {
          // On its own record, the owner must never be told it does not exist.
          const ownRecord =
            rule.kind === 'owned' || rule.kind === 'reseller-owned' || rule.kind === 'management';
          if (
            response.status === 401 ||
            response.status === 403 ||
            response.status >= 500 ||
            (ownRecord && path.includes('{') && response.status === 404)
          )
            failures.push(`${label} (expected allowed)`);
        } else {
          if (response.status !== expected.status || response.body?.code !== expected.code)
            failures.push(`${label} (expected ${expected.status} ${expected.code})`);
          // A refusal never answers a stack trace, data or a secret.
          expect(Object.keys(response.body ?? {}).sort(), label).toEqual(['code', 'message']);
          expect(JSON.stringify(response.body), label).not.toMatch(
            /at .*\.ts:\d+|mk-tg-[0-9A-Za-z]|sk-tg-[0-9A-Za-z]/,
          );
        }
      }
    }
    expect(failures).toEqual([]);
    expect(principals).toHaveLength(18);
    expect(calls).toBe(routes.length * principals.length);
  }, 300_000);
});
