import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balancesOf } from '../../test-kit.ts';
import { createTestContext, type TestContext } from '../../testing.ts';
import { createClient, latestRegisterCode, uniqueEmail } from '../auth/test-client.ts';
import { verifyLedger } from '../billing/ledger-check.ts';
import {
  createManagementKey,
  type Member,
  managementCall,
  member,
  seedCatalog,
} from '../resellers/resellers.test-support.ts';

let context: TestContext;
let admin: Member;

beforeAll(async () => {
  context = await createTestContext('admin-area', { TRUST_PROXY: 'true' });
  await seedCatalog(context);
  admin = await member(context, 'root', { admin: true });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  expect(await verifyLedger(context.deps.db)).toEqual([]);
  await context.close();
});

const SMUGGLED = {
  isAdmin: true,
  is_admin: true,
  isReseller: true,
  is_reseller: true,
  resellerId: '00000000-0000-4000-8000-000000000001',
  reseller_id: '00000000-0000-4000-8000-000000000001',
  status: 'active',
  accountId: '00000000-0000-4000-8000-000000000001',
  account_id: '00000000-0000-4000-8000-000000000001',
  credits: '1000000',
  balance: '1000000',
  tokens: '1000000',
};

async function accountRow(id: string) {
  return context.deps.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

describe('mass assignment: no body field sets a role, an owner, a reseller link, a balance or a key account', () => {
  it('through registration, /me and /me/api-keys', async () => {
    const client = createClient(context);
    const email = uniqueEmail('smuggler');
    await client.request('POST', '/auth/register/code', { body: { email } });
    const code = await latestRegisterCode(context, email);
    const registered = await client.request('POST', '/auth/register', {
      body: { ...SMUGGLED, email, code, password: 'a-long-password-123' },
    });
    expect(registered.status).toBe(201);
    const id = registered.body.data.id;
    await client.logIn(email, 'a-long-password-123');
    await client.request('PATCH', '/me', { body: { ...SMUGGLED, displayName: 'x' } });
    await client.request('POST', '/me/password', {
      body: { ...SMUGGLED, currentPassword: 'wrong', newPassword: 'x' },
    });
    const key = await client.request('POST', '/me/api-keys', { body: { ...SMUGGLED, name: 'k' } });
    expect(key.status).toBe(201);
    await client.request('PATCH', `/me/api-keys/${key.body.data.key.id}/status`, {
      body: { ...SMUGGLED, status: 'disabled' },
    });
    const row = await accountRow(id);
    expect(row).toMatchObject({
      is_admin: false,
      is_reseller: false,
      reseller_id: null,
      status: 'active',
      display_name: 'x',
    });
    const keyRow = await context.deps.db
      .selectFrom('api_keys')
      .select('account_id')
      .where('id', '=', key.body.data.key.id)
      .executeTakeFirstOrThrow();
    expect(keyRow.account_id).toBe(id);
    expect(await balancesOf(context.deps.db, id)).toMatchObject({ tokens: 0n, credits: 0n });
  });

  it('through the reseller area and the management endpoints', async () => {
    const reseller = await member(context, 'mass-reseller', { reseller: true });
    const other = await member(context, 'mass-other', { reseller: true });
    const smuggled = {
      ...SMUGGLED,
      resellerId: other.id,
      reseller_id: other.id,
      accountId: other.id,
      account_id: other.id,
    };
    const created = await reseller.request('POST', '/reseller/customers', {
      body: { ...smuggled, email: uniqueEmail('c') },
    });
    expect(created.status).toBe(201);
    const customerId = created.body.data.id;
    expect(await accountRow(customerId)).toMatchObject({
      is_admin: false,
      is_reseller: false,
      reseller_id: reseller.id,
    });
    const key = await reseller.request('POST', `/reseller/customers/${customerId}/api-keys`, {
      body: { ...smuggled, name: 'k' },
    });
    const keyRow = await context.deps.db
      .selectFrom('api_keys')
      .select('account_id')
      .where('id', '=', key.body.data.key.id)
      .executeTakeFirstOrThrow();
    expect(keyRow.account_id).toBe(customerId);
    const management = await reseller.request('POST', '/reseller/management-keys', {
      body: { ...smuggled, name: 'm', scopes: ['customers:write', 'grants:write'] },
    });
    expect(management.status).toBe(201);
    expect((await other.request('GET', '/reseller/management-keys')).body.data).toEqual([]);
    const secret = management.body.data.secret;
    const viaSoftware = await managementCall(context, secret, 'POST', '/reseller-management/customers', {
      body: { ...smuggled, email: uniqueEmail('sw') },
    });
    expect(viaSoftware.status).toBe(201);
    expect(await accountRow(viaSoftware.body.data.id)).toMatchObject({
      is_admin: false,
      reseller_id: reseller.id,
    });
    // A grant names its customer by the path alone; nothing it holds, nothing moves.
    const grant = await managementCall(
      context,
      secret,
      'POST',
      `/reseller-management/customers/${customerId}/grants`,
      {
        body: { credits: '5', customerId: other.id, resellerId: other.id },
      },
    );
    expect(grant.status).toBe(402);
    expect(await balancesOf(context.deps.db, customerId)).toMatchObject({ credits: 0n, tokens: 0n });
  });

  it('through the admin routes: each changes only what it is for', async () => {
    const target = await member(context, 'mass-target');
    await admin.request('PATCH', `/admin/accounts/${target.id}/status`, {
      body: { ...SMUGGLED, status: 'active' },
    });
    await admin.request('PATCH', `/admin/accounts/${target.id}/roles`, {
      body: { ...SMUGGLED, reseller: false },
    });
    await admin.request('PUT', `/admin/accounts/${target.id}/reseller`, {
      body: { ...SMUGGLED, resellerId: null },
    });
    await admin.request('POST', `/admin/accounts/${target.id}/credit-adjustments`, {
      body: { ...SMUGGLED, amount: '-1', note: 'n' },
    });
    expect(await accountRow(target.id)).toMatchObject({
      is_admin: false,
      is_reseller: false,
      reseller_id: null,
    });
    expect(await balancesOf(context.deps.db, target.id)).toMatchObject({ credits: 0n, tokens: 0n });
  });
});

describe('admin area', () => {
  it('sets and clears roles, and cannot drop its own admin permission', async () => {
    const someone = await member(context, 'roles');
    const set = await admin.request('PATCH', `/admin/accounts/${someone.id}/roles`, {
      body: { admin: true, reseller: true },
    });
    expect(set.body.data).toMatchObject({ isAdmin: true, isReseller: true });
    const cleared = await admin.request('PATCH', `/admin/accounts/${someone.id}/roles`, {
      body: { admin: false },
    });
    expect(cleared.body.data).toMatchObject({ isAdmin: false, isReseller: true });
    const self = await admin.request('PATCH', `/admin/accounts/${admin.id}/roles`, {
      body: { admin: false },
    });
    expect(self.status).toBe(403);
    expect(
      (
        await admin.request('PATCH', '/admin/accounts/00000000-0000-4000-8000-000000000000/roles', {
          body: { admin: true },
        })
      ).status,
    ).toBe(404);
    expect((await admin.request('PATCH', `/admin/accounts/${someone.id}/roles`, { body: {} })).status).toBe(
      422,
    );
  });

  it('attaches a customer to a reseller and detaches it', async () => {
    const reseller = await member(context, 'attach-r', { reseller: true });
    const plain = await member(context, 'attach-plain');
    const customer = await member(context, 'attach-c');
    const refused = await admin.request('PUT', `/admin/accounts/${customer.id}/reseller`, {
      body: { resellerId: plain.id },
    });
    expect(refused.status).toBe(422);
    const attached = await admin.request('PUT', `/admin/accounts/${customer.id}/reseller`, {
      body: { resellerId: reseller.id },
    });
    expect(attached.body.data.resellerId).toBe(reseller.id);
    expect((await reseller.request('GET', `/reseller/customers/${customer.id}`)).status).toBe(200);
    const search = await admin.request('GET', `/admin/accounts?resellerId=${reseller.id}`);
    expect(search.body.data.items.map((item: { id: string }) => item.id)).toEqual([customer.id]);
    await admin.request('PUT', `/admin/accounts/${customer.id}/reseller`, { body: { resellerId: null } });
    expect((await reseller.request('GET', `/reseller/customers/${customer.id}`)).status).toBe(404);
  });

  it('grants and adjusts with a required note, and shows keys, balance, entitlements, activity and ledger', async () => {
    const target = await member(context, 'funded');
    const key = await target.request('POST', '/me/api-keys', { body: { name: 'k' } });
    const noNote = await admin.request('POST', `/admin/accounts/${target.id}/grants`, {
      body: { credits: '10' },
    });
    expect(noNote.status).toBe(422);
    expect(noNote.body.errors.note).toBeDefined();
    const once = { headers: { 'idempotency-key': 'promo-1' }, body: { packageId: 'small', note: 'promo' } };
    const first = await admin.request('POST', `/admin/accounts/${target.id}/grants`, once);
    const repeat = await admin.request('POST', `/admin/accounts/${target.id}/grants`, once);
    expect(repeat.body.data).toEqual({ entitlementId: first.body.data.entitlementId, replay: true });
    await admin.request('POST', `/admin/accounts/${target.id}/grants`, {
      body: { credits: '300', note: 'goodwill' },
    });
    const adjusted = await admin.request('POST', `/admin/accounts/${target.id}/credit-adjustments`, {
      body: { amount: '-100', note: 'correction' },
    });
    expect(adjusted.status).toBe(201);
    const below = await admin.request('POST', `/admin/accounts/${target.id}/credit-adjustments`, {
      body: { amount: '-201', note: 'too far' },
    });
    expect(below.status).toBe(422);

    const balance = await admin.request('GET', `/admin/accounts/${target.id}/balance`);
    expect(balance.body.data.remaining).toEqual({ tokens: '1000', credits: '200' });
    const entitlements = await admin.request('GET', `/admin/accounts/${target.id}/entitlements`);
    expect(entitlements.body.data).toHaveLength(1);
    const keys = await admin.request('GET', `/admin/accounts/${target.id}/api-keys`);
    expect(keys.body.data.map((item: { id: string }) => item.id)).toEqual([key.body.data.key.id]);
    expect(JSON.stringify(keys.body)).not.toContain(key.body.data.secret);
    expect((await admin.request('GET', `/admin/accounts/${target.id}/activity`)).body.data.items).toEqual([]);
    const ledger = await admin.request('GET', `/admin/accounts/${target.id}/ledger?limit=2`);
    expect(ledger.body.data.items.map((item: { amount: string }) => item.amount)).toEqual(['-100', '300']);
    const rest = await admin.request(
      'GET',
      `/admin/accounts/${target.id}/ledger?limit=2&cursor=${ledger.body.data.nextCursor}`,
    );
    expect(rest.body.data.items.map((item: { amount: string; cause: string }) => item.amount)).toEqual([
      '1000',
    ]);
    expect(rest.body.data.items[0].cause).toContain('promo');
    expect((await admin.request('GET', `/admin/accounts/${target.id}`)).body.data.email).toBe(target.email);
    for (const view of ['', '/balance', '/api-keys', '/ledger']) {
      expect(
        (await admin.request('GET', `/admin/accounts/00000000-0000-4000-8000-000000000000${view}`)).status,
      ).toBe(404);
    }
  });

  it('keeps an append-only audit log of admin, reseller, management-key actions and key reveals, filtered and paged', async () => {
    const reseller = await member(context, 'audited', { reseller: true });
    const customer = await reseller.request('POST', '/reseller/customers', {
      body: { email: uniqueEmail('ac') },
    });
    const management = await createManagementKey(reseller, ['keys:write']);
    const created = await managementCall(
      context,
      management.secret,
      'POST',
      `/reseller-management/customers/${customer.body.data.id}/api-keys`,
      {
        body: { name: 'via software' },
        headers: { 'user-agent': 'reseller-software/2.0' },
      },
    );
    expect(created.status).toBe(201);
    const own = await reseller.request('POST', '/me/api-keys', { body: { name: 'own' } });
    await reseller.request('POST', `/me/api-keys/${own.body.data.key.id}/reveal`);
    await admin.request('PATCH', `/admin/accounts/${reseller.id}/status`, { body: { status: 'suspended' } });
    await admin.request('PATCH', `/admin/accounts/${reseller.id}/status`, { body: { status: 'active' } });

    const mine = await admin.request('GET', `/admin/audit?actorAccountId=${reseller.id}`);
    expect(mine.status).toBe(200);
    const actions = mine.body.data.items.map((item: { action: string }) => item.action);
    expect(actions).toEqual([
      'api_key.reveal',
      'reseller.api_key.create',
      'management_key.create',
      'reseller.customer.create',
    ]);
    const bySoftware = mine.body.data.items[1];
    expect(bySoftware).toMatchObject({
      actor: { accountId: reseller.id, managementKeyId: management.id },
      target: { type: 'api_key', id: created.body.data.key.id },
      userAgent: 'reseller-software/2.0',
    });
    expect(bySoftware.ip).toBeTruthy();
    const onTarget = await admin.request(
      'GET',
      `/admin/audit?targetId=${reseller.id}&action=admin.account.suspend`,
    );
    expect(onTarget.body.data.items).toHaveLength(1);
    expect(onTarget.body.data.items[0].actor.accountId).toBe(admin.id);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: { items: Array<{ id: string }>; nextCursor: string | null } } } =
        await admin.request(
          'GET',
          `/admin/audit?actorAccountId=${reseller.id}&limit=1${cursor ? `&cursor=${cursor}` : ''}`,
        );
      seen.push(...page.body.data.items.map((item) => item.id));
      cursor = page.body.data.nextCursor;
    } while (cursor);
    expect(seen).toEqual(mine.body.data.items.map((item: { id: string }) => item.id));
    expect((await admin.request('GET', '/admin/audit?cursor=nonsense')).status).toBe(422);
    await expect(sql`delete from audit_log`.execute(context.deps.db)).rejects.toThrow(/append-only/);
    await expect(sql`update audit_log set action = 'x'`.execute(context.deps.db)).rejects.toThrow(
      /append-only/,
    );
  });
});
