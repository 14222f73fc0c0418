import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, latestEmailText, uniqueEmail } from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import {
  acceptInvitation,
  createManagementKey,
  fundedReseller as fundedResellerOf,
  invitationToken,
  type Member,
  managementCall,
  member,
  seedCatalog,
} from '../../../test/resellers.ts';
import { recordWork } from '../../../test/work-recorder.ts';
import { inviteCustomer } from './invitations.service.ts';

let context: TestContext;
let admin: Member;

beforeAll(async () => {
  context = await createTestContext('reseller-invitations', { TRUST_PROXY: 'true' });
  await seedCatalog(context);
  admin = await member(context, 'admin', { admin: true });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

const fundedReseller = (label: string) => fundedResellerOf(context, admin, label, { credits: '1000' });

async function customerIds(reseller: Member): Promise<string[]> {
  const listed = await reseller.request('GET', '/reseller/customers');
  return listed.body.data.items.map((item: { id: string }) => item.id);
}

async function accountIdOf(email: string): Promise<string | undefined> {
  const row = await context.deps.db
    .selectFrom('accounts')
    .select('id')
    .where('email', '=', email)
    .executeTakeFirst();
  return row?.id;
}

/** An answer with what differs between any two invitations (ids, addresses, times) left out. */
function shapeOf(response: { status: number; body: { data: Record<string, unknown> } }) {
  const { id, email, createdAt, expiresAt, ...rest } = response.body.data;
  return { status: response.status, keys: Object.keys(response.body.data).sort(), rest };
}

describe('a reseller invites, the person accepts', () => {
  it('creates nothing for an address without an account until its owner accepts and chooses a password', async () => {
    const reseller = await fundedReseller('inviter');
    const email = uniqueEmail('new-person');
    const invited = await reseller.request('POST', '/reseller/customers', {
      body: { email, displayName: 'Ada' },
    });
    expect(invited.status).toBe(201);
    expect(invited.body.data).toMatchObject({ email, status: 'pending', customerId: null });
    expect(await accountIdOf(email)).toBeUndefined();
    expect(await customerIds(reseller)).toEqual([]);

    const withoutPassword = await acceptInvitation(context, email, null);
    expect(withoutPassword.status).toBe(422);
    expect(withoutPassword.body.errors.password).toHaveLength(1);
    const password = 'a-new-long-password-1';
    const accepted = await acceptInvitation(context, email, password);
    expect(accepted.status).toBe(200);
    expect(accepted.body.data).toEqual({ accountCreated: true, resellerId: reseller.id });
    const customerId = await accountIdOf(email);
    expect(await customerIds(reseller)).toEqual([customerId]);
    const listed = await reseller.request('GET', '/reseller/invitations');
    expect(listed.body.data.items[0]).toMatchObject({ email, status: 'accepted', customerId });

    const person = createClient(context);
    expect((await person.logIn(email, password)).status).toBe(200);
    const mine = await person.request('GET', '/me/reseller');
    expect(mine.body.data.reseller).toMatchObject({ id: reseller.id, email: reseller.email });

    const reused = await acceptInvitation(context, email, 'another-long-password-2');
    expect(reused.status).toBe(422);
    expect(reused.body.code).toBe('validation_failed');
  });

  it('cannot squat an address: its owner who signs up alone is nobody’s customer, and the reseller sees nothing', async () => {
    const reseller = await fundedReseller('squatter');
    const email = uniqueEmail('squatted');
    const invited = await reseller.request('POST', '/reseller/customers', { body: { email } });
    expect(invited.status).toBe(201);
    // The owner ignores the invitation and makes an account the usual way.
    const owner = createClient(context);
    const { id } = await owner.signUp(email, 'owner-long-password-1');
    await owner.logIn(email, 'owner-long-password-1');
    expect((await owner.request('GET', '/me/reseller')).body.data.reseller).toBeNull();
    expect(await customerIds(reseller)).toEqual([]);
    for (const path of [`/reseller/customers/${id}`, `/reseller/customers/${id}/usage`]) {
      expect((await reseller.request('GET', path)).status, path).toBe(404);
    }
    const key = await reseller.request('POST', `/reseller/customers/${id}/api-keys`, { body: { name: 'k' } });
    expect(key.status).toBe(404);
  });

  it('answers alike for an address with an account and one without, through the session and a management key', async () => {
    const reseller = await fundedReseller('prober');
    const registered = await member(context, 'registered');
    const software = await createManagementKey(reseller, ['customers:write']);
    const unknown = uniqueEmail('unregistered');
    const answers = [
      await reseller.request('POST', '/reseller/customers', { body: { email: registered.email } }),
      await reseller.request('POST', '/reseller/customers', { body: { email: unknown } }),
      await managementCall(context, software.secret, 'POST', '/reseller-management/customers', {
        body: { email: registered.email },
      }),
      await managementCall(context, software.secret, 'POST', '/reseller-management/customers', {
        body: { email: uniqueEmail('unregistered-2') },
      }),
    ];
    const shapes = answers.map(shapeOf);
    // The same work either way too, so the time taken tells nothing either.
    const work = async (address: string) => {
      const recorded = recordWork(context.deps.db, address);
      const actor = { accountId: reseller.id, ip: '192.0.2.9', userAgent: null };
      await inviteCustomer({ ...context.deps, db: recorded.db }, recorded.mailer, actor, { email: address });
      return recorded.work;
    };
    const known = await work(registered.email);
    expect(known.mails).toEqual(['to the address']);
    expect(known.statements).toContain('InsertQueryNode ["reseller_invitations"]');
    expect(await work(uniqueEmail('unregistered-3'))).toEqual(known);
    for (const shape of shapes) expect(shape).toEqual(shapes[0]);
    expect(shapes[0]?.status).toBe(201);
    // And nothing was linked.
    expect(await customerIds(reseller)).toEqual([]);
    const mine = await registered.request('GET', '/me/reseller');
    expect(mine.body.data.reseller).toBeNull();
  });
});

describe('an existing account accepts, sees its reseller and ends the link', () => {
  it('links on acceptance only; ending it cuts the reseller off and revokes the keys it made', async () => {
    const reseller = await fundedReseller('manager');
    const person = await member(context, 'managed');
    const ownKey = await person.request('POST', '/me/api-keys', { body: { name: 'mine' } });
    await reseller.request('POST', '/reseller/customers', { body: { email: person.email } });
    expect(await latestEmailText(context, person.email, 'reseller_invitation')).toMatch(
      /manage your Tollgate account/,
    );
    expect(await customerIds(reseller)).toEqual([]);

    const accepted = await acceptInvitation(context, person.email, null);
    expect(accepted.status).toBe(200);
    expect(accepted.body.data).toEqual({ accountCreated: false, resellerId: reseller.id });
    expect((await person.logIn(person.email, person.password)).status).toBe(200);
    expect(await customerIds(reseller)).toEqual([person.id]);
    const made = await reseller.request('POST', `/reseller/customers/${person.id}/api-keys`, {
      body: { name: 'from reseller' },
    });
    expect(made.status).toBe(201);
    const grant = await reseller.request('POST', `/reseller/customers/${person.id}/grants`, {
      body: { credits: '100' },
    });
    expect(grant.status).toBe(201);
    expect((await person.request('GET', '/me/reseller')).body.data.reseller.id).toBe(reseller.id);

    const ended = await person.request('DELETE', '/me/reseller');
    expect(ended.status).toBe(200);
    expect(ended.body.data).toEqual({ revokedKeys: 1 });
    expect((await person.request('GET', '/me/reseller')).body.data.reseller).toBeNull();
    expect(await customerIds(reseller)).toEqual([]);
    expect((await reseller.request('GET', `/reseller/customers/${person.id}/usage`)).status).toBe(404);
    const again = await reseller.request('POST', `/reseller/customers/${person.id}/api-keys`, {
      body: { name: 'again' },
    });
    expect(again.status).toBe(404);
    const keys = await person.request('GET', '/me/api-keys');
    const states = Object.fromEntries(
      keys.body.data.map((key: { id: string; state: string }) => [key.id, key.state]),
    );
    expect(states).toEqual({ [made.body.data.key.id]: 'revoked', [ownKey.body.data.key.id]: 'active' });
    // The credit granted stays the customer's.
    const balance = await person.request('GET', '/me/balance');
    expect(balance.body.data.remaining.credits).toBe('100');
  });

  it('moving to another reseller ends the first one’s access and revokes the keys it made', async () => {
    const first = await fundedReseller('first');
    const second = await fundedReseller('second');
    const person = await member(context, 'moving');
    await first.request('POST', '/reseller/customers', { body: { email: person.email } });
    expect((await acceptInvitation(context, person.email, null)).status).toBe(200);
    const made = await first.request('POST', `/reseller/customers/${person.id}/api-keys`, {
      body: { name: 'from the first' },
    });
    expect(made.status).toBe(201);

    await second.request('POST', '/reseller/customers', { body: { email: person.email } });
    expect((await acceptInvitation(context, person.email, null)).status).toBe(200);
    expect(await customerIds(first)).toEqual([]);
    expect(await customerIds(second)).toEqual([person.id]);
    const keys = await person.request('GET', '/me/api-keys');
    expect(keys.body.data.map((key: { state: string }) => key.state)).toEqual(['revoked']);
  });

  it('refuses an admin account and a token of an address that has been invited again', async () => {
    const reseller = await fundedReseller('to-admin');
    await reseller.request('POST', '/reseller/customers', { body: { email: admin.email } });
    const refused = await acceptInvitation(context, admin.email, null);
    expect(refused.status).toBe(422);
    expect(refused.body.errors.token).toHaveLength(1);

    const email = uniqueEmail('twice');
    await reseller.request('POST', '/reseller/customers', { body: { email } });
    const first = await invitationToken(context, email);
    await reseller.request('POST', '/reseller/customers', { body: { email } });
    const stale = await createClient(context).request('POST', '/auth/accept-invitation', {
      body: { token: first, password: 'a-long-password-3' },
    });
    expect(stale.status).toBe(422);
    expect(await accountIdOf(email)).toBeUndefined();
  });
});
