import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, latestRegisterCode, uniqueEmail } from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { balancesOf } from '../../../test/kit.ts';
import {
  invitationToken,
  type Member,
  managementCall,
  member,
  seedCatalog,
} from '../../../test/resellers.ts';
import { verifyLedger } from '../billing/ledger-check.ts';

let context: TestContext;
let admin: Member;

beforeAll(async () => {
  context = await createTestContext('mass-assignment', { TRUST_PROXY: 'true' });
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
    expect(await balancesOf(context.deps, id)).toMatchObject({ tokens: 0n, credits: 0n });
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
    const email = uniqueEmail('c');
    const created = await reseller.request('POST', '/reseller/customers', { body: { ...smuggled, email } });
    expect(created.status).toBe(201);
    // Smuggled fields in the acceptance are ignored too.
    const accepted = await createClient(context).request('POST', '/auth/accept-invitation', {
      body: { ...smuggled, token: await invitationToken(context, email), password: 'a-long-password-9' },
    });
    expect(accepted.status).toBe(200);
    const customerId = (
      await context.deps.db
        .selectFrom('accounts')
        .select('id')
        .where('email', '=', email)
        .executeTakeFirstOrThrow()
    ).id;
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
    const softwareEmail = uniqueEmail('sw');
    const viaSoftware = await managementCall(context, secret, 'POST', '/reseller-management/customers', {
      body: { ...smuggled, email: softwareEmail },
    });
    expect(viaSoftware.status).toBe(201);
    const invitations = async (of: Member) =>
      (await of.request('GET', '/reseller/invitations')).body.data.items.map(
        (item: { email: string }) => item.email,
      );
    expect(await invitations(reseller)).toContain(softwareEmail);
    expect(await invitations(other)).toEqual([]);
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
    expect(await balancesOf(context.deps, customerId)).toMatchObject({ credits: 0n, tokens: 0n });
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
    expect(await balancesOf(context.deps, target.id)).toMatchObject({ credits: 0n, tokens: 0n });
  });
});
