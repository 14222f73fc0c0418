import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { balancesOf } from '../../../test/kit.ts';
import {
  customerOf,
  fundedReseller as fundedResellerOf,
  type Member,
  member,
  seedCatalog,
} from '../../../test/resellers.ts';
import { verifyLedger } from '../billing/ledger-check.ts';

let context: TestContext;
let admin: Member;

beforeAll(async () => {
  context = await createTestContext('resellers', {
    TRUST_PROXY: 'true',
  });
  await seedCatalog(context);
  admin = await member(context, 'admin', { admin: true });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  expect(await verifyLedger(context.deps.db)).toEqual([]);
  await context.close();
});

const fundedReseller = (label: string, funding: { packages?: number; credits?: string } = {}) =>
  fundedResellerOf(context, admin, label, funding);

describe('reseller area (session)', () => {
  it('grants from its own holdings: a ledger row on both sides, never more than it holds', async () => {
    const reseller = await fundedReseller('granter', { packages: 1, credits: '500' });
    const customerId = await customerOf(context, reseller);
    const tokens = await reseller.request('POST', `/reseller/customers/${customerId}/grants`, {
      body: { packageId: 'small', tokens: '400' },
    });
    expect(tokens.status).toBe(201);
    expect(tokens.body.data).toMatchObject({ customerId, packageId: 'small', tokens: '400', credits: '0' });
    const credits = await reseller.request('POST', `/reseller/customers/${customerId}/grants`, {
      body: { credits: '200', note: 'welcome' },
    });
    expect(credits.status).toBe(201);
    expect(await balancesOf(context.deps, reseller.id)).toMatchObject({ tokens: 600n, credits: 300n });
    expect(await balancesOf(context.deps, customerId)).toMatchObject({ tokens: 400n, credits: 200n });

    const tooMuch = await reseller.request('POST', `/reseller/customers/${customerId}/grants`, {
      body: { packageId: 'small', tokens: '601' },
    });
    expect(tooMuch.status).toBe(402);
    expect(tooMuch.body.code).toBe('insufficient_tokens');
    const wholePackage = await reseller.request('POST', `/reseller/customers/${customerId}/grants`, {
      body: { packageId: 'small' },
    });
    expect(wholePackage.body.code).toBe('insufficient_tokens');
    const notHeld = await reseller.request('POST', `/reseller/customers/${customerId}/grants`, {
      body: { packageId: 'exact', tokens: '1' },
    });
    expect(notHeld.body.code).toBe('insufficient_tokens');
    const noCredit = await reseller.request('POST', `/reseller/customers/${customerId}/grants`, {
      body: { credits: '301' },
    });
    expect(noCredit.status).toBe(402);
    expect(noCredit.body.code).toBe('insufficient_credits');
    const both = await reseller.request('POST', `/reseller/customers/${customerId}/grants`, {
      body: { credits: '1', packageId: 'small' },
    });
    expect(both.status).toBe(422);

    const ledger = await admin.request('GET', `/admin/accounts/${reseller.id}/ledger`);
    const kinds = ledger.body.data.items.map(
      (item: { kind: string; amount: string }) => `${item.kind}:${item.amount}`,
    );
    expect(kinds).toEqual(
      expect.arrayContaining(['adjustment:-400', 'adjustment:-200', 'grant:1000', 'grant:500']),
    );
    expect(await verifyLedger(context.deps.db)).toEqual([]);
  });

  it("never reaches another reseller's customer: not_found, with nothing moved", async () => {
    const reseller = await fundedReseller('mine', { credits: '100' });
    const other = await fundedReseller('theirs', { credits: '100' });
    const theirCustomer = await customerOf(context, other);
    for (const [method, path, body] of [
      ['GET', `/reseller/customers/${theirCustomer}`, undefined],
      ['POST', `/reseller/customers/${theirCustomer}/grants`, { credits: '1' }],
      ['GET', `/reseller/customers/${theirCustomer}/usage`, undefined],
      ['GET', `/reseller/customers/${theirCustomer}/activity`, undefined],
      ['GET', `/reseller/customers/${theirCustomer}/api-keys`, undefined],
      ['POST', `/reseller/customers/${theirCustomer}/api-keys`, { name: 'x' }],
      ['GET', `/reseller/customers/${admin.id}`, undefined],
      ['GET', '/reseller/customers/not-a-uuid', undefined],
    ] as const) {
      const response = await reseller.request(method, path, body === undefined ? {} : { body });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body.code).toBe('not_found');
    }
    expect(await balancesOf(context.deps, reseller.id)).toMatchObject({ credits: 100n });
  });

  it("lists, creates, disables and revokes a customer's inference keys", async () => {
    const reseller = await fundedReseller('keys');
    const customerId = await customerOf(context, reseller);
    const created = await reseller.request('POST', `/reseller/customers/${customerId}/api-keys`, {
      body: { name: 'prod', scope: ['priced'] },
    });
    expect(created.status).toBe(201);
    expect(created.body.data.secret).toMatch(/^sk-tg-/);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const keyId = created.body.data.key.id;
    const list = await reseller.request('GET', `/reseller/customers/${customerId}/api-keys`);
    expect(list.body.data.map((key: { id: string }) => key.id)).toEqual([keyId]);
    expect(JSON.stringify(list.body)).not.toContain(created.body.data.secret);
    const owner = await context.deps.db
      .selectFrom('api_keys')
      .select('account_id')
      .where('id', '=', keyId)
      .executeTakeFirst();
    expect(owner?.account_id).toBe(customerId);
    for (const status of ['disabled', 'active', 'revoked'] as const) {
      const changed = await reseller.request(
        'PATCH',
        `/reseller/customers/${customerId}/api-keys/${keyId}/status`,
        {
          body: { status },
        },
      );
      expect(changed.body.data.state).toBe(status);
    }
  });
});
