/**
 * A reseller's key for its customer, and a customer ending its reseller link, commit with their
 * audit rows or not at all. The key's row is also the record of who made it: ending the link
 * revokes the keys it names, so a key without its row would stay with the reseller.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditRefusal } from '../../../test/audit-refusal.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import {
  acceptInvitation,
  fundedReseller,
  type Member,
  member,
  seedCatalog,
} from '../../../test/resellers.ts';

let context: TestContext;
let admin: Member;
let refusal: Awaited<ReturnType<typeof auditRefusal>>;

beforeAll(async () => {
  context = await createTestContext('reseller-audit-atomic', { TRUST_PROXY: 'true' });
  await seedCatalog(context);
  admin = await member(context, 'admin', { admin: true });
  refusal = await auditRefusal(context);
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

async function managedCustomer(label: string) {
  const reseller = await fundedReseller(context, admin, `${label}-reseller`, { credits: '1000' });
  const person = await member(context, label);
  await reseller.request('POST', '/reseller/customers', { body: { email: person.email } });
  expect((await acceptInvitation(context, person.email, null)).status).toBe(200);
  expect((await person.logIn(person.email, person.password)).status).toBe(200);
  return { reseller, person };
}

const keyStates = async (person: Member) =>
  (await person.request('GET', '/me/api-keys')).body.data.map((key: { state: string }) => key.state);

describe('reseller changes and their audit rows commit together', () => {
  it('a key made for a customer whose audit row fails is not made', async () => {
    const { reseller, person } = await managedCustomer('key-made');
    const make = () =>
      reseller.request('POST', `/reseller/customers/${person.id}/api-keys`, { body: { name: 'for you' } });
    await refusal.refuse(person.id);
    expect((await make()).status).toBe(500);
    expect(await keyStates(person)).toEqual([]);

    await refusal.allow(person.id);
    expect((await make()).status).toBe(201);
    expect(await keyStates(person)).toEqual(['active']);
  });

  it('ending the link with a failed audit row keeps the link and the reseller’s keys', async () => {
    const { reseller, person } = await managedCustomer('link-ended');
    const made = await reseller.request('POST', `/reseller/customers/${person.id}/api-keys`, {
      body: { name: 'for you' },
    });
    expect(made.status).toBe(201);
    await refusal.refuse(person.id);
    expect((await person.request('DELETE', '/me/reseller')).status).toBe(500);
    expect((await person.request('GET', '/me/reseller')).body.data.reseller.id).toBe(reseller.id);
    expect(await keyStates(person)).toEqual(['active']);

    await refusal.allow(person.id);
    const ended = await person.request('DELETE', '/me/reseller');
    expect(ended.status).toBe(200);
    expect(ended.body.data).toEqual({ revokedKeys: 1 });
    expect(await keyStates(person)).toEqual(['revoked']);
  });
});
