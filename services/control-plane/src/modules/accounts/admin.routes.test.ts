import { apiKeyDigest } from '@tollgate/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, expectNowhere, type TestClient, uniqueEmail } from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { findKeyByDigest } from '../api-keys/api-keys.service.ts';
import { findAccountByEmail, setAccountRoles } from './accounts.service.ts';

let context: TestContext;
const passwords: string[] = [];

beforeAll(async () => {
  context = await createTestContext('admin', { TRUST_PROXY: 'true' });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  expectNowhere(context, passwords);
  await context.close();
});

async function member(label: string, roles: { admin?: boolean; reseller?: boolean } = {}) {
  const client = createClient(context);
  const email = uniqueEmail(label);
  const password = `pw-${Math.random().toString(36).slice(2)}-admin`;
  passwords.push(password);
  const { id } = await client.signUp(email, password);
  if (roles.admin || roles.reseller) await setAccountRoles(context.deps.db, id, roles);
  await client.logIn(email, password);
  return Object.assign(client, { id: id as string, email, password });
}

async function expectForbidden(client: TestClient, method: string, path: string, body?: unknown) {
  const response = await client.request(method, path, body === undefined ? {} : { body });
  expect(response.status).toBe(403);
  expect(response.body.code).toBe('forbidden');
}

describe('operator functions', () => {
  it('find an account by email in any letter case and set its roles', async () => {
    const someone = await member('cli');
    const found = await findAccountByEmail(context.deps.db, someone.email.toUpperCase());
    expect(found?.id).toBe(someone.id);
    const promoted = await setAccountRoles(context.deps.db, someone.id, { admin: true });
    expect(promoted).toMatchObject({ isAdmin: true, isReseller: false });
    expect(await findAccountByEmail(context.deps.db, uniqueEmail('none'))).toBeNull();
  });
});

describe('/admin', () => {
  it('is forbidden without the admin permission', async () => {
    const customer = await member('plain');
    const reseller = await member('reseller-not-admin', { reseller: true });
    for (const client of [customer, reseller]) {
      await expectForbidden(client, 'GET', '/admin/accounts');
      await expectForbidden(client, 'PATCH', `/admin/accounts/${customer.id}/status`, {
        status: 'suspended',
      });
    }
    expect((await createClient(context).request('GET', '/admin/accounts')).status).toBe(401);
  });

  it('lists accounts, newest first, paged', async () => {
    const admin = await member('lister', { admin: true });
    await member('listed-a');
    await member('listed-b');
    const first = await admin.request('GET', '/admin/accounts?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data.items).toHaveLength(2);
    expect(first.body.data.nextCursor).toBe(first.body.data.items[1].id);
    const second = await admin.request('GET', `/admin/accounts?limit=2&after=${first.body.data.nextCursor}`);
    const ids = [...first.body.data.items, ...second.body.data.items].map((item: { id: string }) => item.id);
    expect(new Set(ids).size).toBe(ids.length);
    const filtered = await admin.request('GET', `/admin/accounts?email=${encodeURIComponent(admin.email)}`);
    expect(filtered.body.data.items.map((item: { id: string }) => item.id)).toEqual([admin.id]);
    expect(JSON.stringify(first.body)).not.toMatch(/password/i);
  });

  it('suspends an account: account_suspended everywhere, at the gateway lookup too; then reinstates it', async () => {
    const admin = await member('suspender', { admin: true });
    const target = await member('target');
    const created = await target.request('POST', '/me/api-keys', { body: { name: 'k' } });
    const secret: string = created.body.data.secret;
    const resolve = () =>
      findKeyByDigest(
        context.deps.db,
        context.deps.config.keyPepper,
        apiKeyDigest(secret),
        context.clock.now(),
      );

    const suspended = await admin.request('PATCH', `/admin/accounts/${target.id}/status`, {
      body: { status: 'suspended' },
    });
    expect(suspended.status).toBe(200);
    expect(suspended.body.data.status).toBe('suspended');
    expect(context.events.events).toContainEqual({ type: 'account.changed', accountId: target.id });

    for (const [method, path] of [
      ['GET', '/me'],
      ['GET', '/me/sessions'],
      ['GET', '/me/api-keys'],
      ['POST', '/me/api-keys'],
      ['POST', '/auth/logout'],
    ] as const) {
      const response = await target.request(method, path, method === 'POST' ? { body: { name: 'x' } } : {});
      expect(response.status, `${method} ${path}`).toBe(403);
      expect(response.body.code).toBe('account_suspended');
    }
    const again = await target.logIn(target.email, target.password);
    expect(again.body.code).toBe('account_suspended');
    expect((await resolve())?.accountSuspended).toBe(true);

    const restored = await admin.request('PATCH', `/admin/accounts/${target.id}/status`, {
      body: { status: 'active' },
    });
    expect(restored.body.data.status).toBe('active');
    expect((await target.request('GET', '/me')).status).toBe(200);
    expect((await resolve())?.accountSuspended).toBe(false);
  });

  it('answers not_found for an unknown account and refuses to suspend oneself', async () => {
    const admin = await member('self', { admin: true });
    for (const id of ['00000000-0000-4000-8000-000000000000', 'nope']) {
      const response = await admin.request('PATCH', `/admin/accounts/${id}/status`, {
        body: { status: 'suspended' },
      });
      expect(response.status).toBe(404);
    }
    const self = await admin.request('PATCH', `/admin/accounts/${admin.id}/status`, {
      body: { status: 'suspended' },
    });
    expect(self.status).toBe(403);
    expect((await admin.request('GET', '/me')).status).toBe(200);
  });
});

describe('/reseller', () => {
  it('lists only the reseller’s own customers, and is forbidden to others', async () => {
    const reseller = await member('reseller', { reseller: true });
    const otherReseller = await member('other-reseller', { reseller: true });
    const mine = await member('customer-mine');
    const theirs = await member('customer-theirs');
    await context.deps.db
      .updateTable('accounts')
      .set({ reseller_id: reseller.id })
      .where('id', '=', mine.id)
      .execute();
    await context.deps.db
      .updateTable('accounts')
      .set({ reseller_id: otherReseller.id })
      .where('id', '=', theirs.id)
      .execute();

    const response = await reseller.request('GET', '/reseller/customers');
    expect(response.status).toBe(200);
    expect(response.body.data.items.map((item: { id: string }) => item.id)).toEqual([mine.id]);

    await expectForbidden(mine, 'GET', '/reseller/customers');
    await expectForbidden(await member('admin-not-reseller', { admin: true }), 'GET', '/reseller/customers');
  });
});
