import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import {
  createManagementKey,
  customerOf,
  type Member,
  managementCall,
  member,
  seedCatalog,
} from '../../../test/resellers.ts';
import { verifyLedger } from '../billing/ledger-check.ts';

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
    const resellers = await admin.request(
      'GET',
      `/admin/accounts?role=reseller&email=${encodeURIComponent(reseller.email)}`,
    );
    expect(resellers.body.data.items.map((item: { id: string }) => item.id)).toEqual([reseller.id]);
    const none = await admin.request(
      'GET',
      `/admin/accounts?role=admin&status=active&email=${encodeURIComponent(reseller.email)}`,
    );
    expect(none.body.data.items).toEqual([]);
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
    const customerId = await customerOf(context, reseller, 'ac');
    const management = await createManagementKey(reseller, ['keys:write']);
    const created = await managementCall(
      context,
      management.secret,
      'POST',
      `/reseller-management/customers/${customerId}/api-keys`,
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
      'reseller.customer.invite',
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
    // Readable: the actor's and the target account's emails, and the management key's name.
    expect(onTarget.body.data.items[0]).toMatchObject({
      actor: { email: admin.email },
      target: { type: 'account', id: reseller.id, email: reseller.email },
    });
    expect(bySoftware.actor.managementKeyName).toBeTruthy();
    // The email filter finds the actions by or on an account, from part of its address.
    const byEmail = await admin.request(
      'GET',
      `/admin/audit?email=${encodeURIComponent(reseller.email.slice(0, 12).toUpperCase())}`,
    );
    const emailActions = byEmail.body.data.items.map((item: { action: string }) => item.action);
    expect(emailActions).toEqual(
      expect.arrayContaining(['admin.account.suspend', 'reseller.api_key.create']),
    );
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
    const alias = await admin.request('PUT', '/admin/catalog/aliases/audited-alias', {
      body: {
        providerId: 'up-openai',
        upstreamModel: 'm',
        protocols: ['chat_completions'],
        published: false,
        price: null,
        defaultMaxOutputTokens: 10,
        maxOutputTokens: 10,
      },
    });
    expect(alias.status).toBeLessThan(300);
    const catalogue = await admin.request('GET', '/admin/audit?action=admin.catalog.change');
    // Written in the transaction that changed the alias, with what changed.
    expect(catalogue.body.data.items[0]).toMatchObject({
      actor: { accountId: admin.id },
      target: { type: 'alias', id: 'audited-alias' },
      detail: { providerId: 'up-openai', upstreamModel: 'm', published: false },
    });
    await expect(sql`delete from audit_log`.execute(context.deps.db)).rejects.toThrow(/append-only/);
    await expect(sql`update audit_log set action = 'x'`.execute(context.deps.db)).rejects.toThrow(
      /append-only/,
    );
  });
});
