import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import {
  createManagementKey,
  customerOf,
  managementCall,
  member,
  seedCatalog,
} from '../../../test/resellers.ts';

// Who sets which caps, how they bound each other, and where they show.
let context: TestContext;

beforeAll(async () => {
  context = await createTestContext('spend-caps-routes', { TRUST_PROXY: 'true' });
  await seedCatalog(context);
}, 60_000);
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

const cap = (keyId: string | null, unit: string, period: string, limit: string | null) => ({
  body: { keyId, unit, period, limit },
});

describe('spend caps in the session area', () => {
  it('lets a customer cap its keys and account, and shows them with the key status', async () => {
    const customer = await member(context, 'caps-customer');
    const key = (await customer.request('POST', '/me/api-keys', { body: { name: 'capped' } })).body.data.key;
    const set = await customer.request('PUT', '/me/spend-caps', cap(key.id, 'credits', '5h', '1000'));
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({
      timeZone: 'UTC',
      caps: [
        {
          keyId: key.id,
          setBy: 'customer',
          unit: 'credits',
          period: '5h',
          limit: '1000',
          used: '0',
          remaining: '1000',
          resetsAt: null,
        },
      ],
    });
    await customer.request('PUT', '/me/spend-caps', cap(null, 'tokens', 'month', '50000'));
    const zone = await customer.request('PATCH', '/me/spend-caps', { body: { timeZone: 'Asia/Kolkata' } });
    expect(zone.status).toBe(200);
    const month = zone.body.data.caps.find((each: { period: string }) => each.period === 'month');
    expect(month).toMatchObject({ keyId: null, timeZone: 'Asia/Kolkata', limit: '50000' });
    // The first of the month at midnight in Kolkata is 18:30 UTC the day before.
    expect(month.windowStart).toMatch(/T18:30:00\.000Z$/);

    const status = await customer.request('GET', `/me/api-keys/${key.id}/status`);
    expect(status.body.data.caps.map((each: { period: string }) => each.period)).toEqual(['month', '5h']);

    // Changing and removing.
    await customer.request('PUT', '/me/spend-caps', cap(key.id, 'credits', '5h', '10'));
    const removed = await customer.request('PUT', '/me/spend-caps', cap(key.id, 'credits', '5h', null));
    expect(removed.body.data.caps.map((each: { period: string }) => each.period)).toEqual(['month']);
  });

  it('refuses bad timezones, limits and keys of other accounts', async () => {
    const customer = await member(context, 'caps-invalid');
    const other = await member(context, 'caps-other');
    const foreign = (await other.request('POST', '/me/api-keys', { body: { name: 'theirs' } })).body.data.key;
    for (const timeZone of ['Mars/Olympus', 'utc+2', '']) {
      const refused = await customer.request('PATCH', '/me/spend-caps', { body: { timeZone } });
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe('validation_failed');
    }
    for (const body of [
      { keyId: null, unit: 'credits', period: '5h', limit: '0' },
      { keyId: null, unit: 'credits', period: 'hour', limit: '5' },
      { keyId: null, unit: 'dollars', period: 'day', limit: '5' },
      { keyId: null, unit: 'credits', period: 'day', limit: 5 },
      { keyId: null, unit: 'credits', period: 'day', limit: '99999999999999999999' },
    ]) {
      expect((await customer.request('PUT', '/me/spend-caps', { body })).status).toBe(422);
    }
    const theirs = await customer.request('PUT', '/me/spend-caps', cap(foreign.id, 'credits', 'day', '5'));
    expect(theirs.status).toBe(404);
  });

  it('bounds a customer by the caps its reseller and the operator set, which it cannot change', async () => {
    const reseller = await member(context, 'caps-reseller', { reseller: true });
    const admin = await member(context, 'caps-admin', { admin: true });
    const customerId = await customerOf(context, reseller, 'caps-customer-of');
    const byReseller = await reseller.request(
      'PUT',
      `/reseller/customers/${customerId}/spend-caps`,
      cap(null, 'credits', 'day', '5000'),
    );
    expect(byReseller.status).toBe(200);
    expect(byReseller.body.data.caps).toMatchObject([{ setBy: 'reseller', limit: '5000' }]);
    const byAdmin = await admin.request(
      'PUT',
      `/admin/accounts/${customerId}/spend-caps`,
      cap(null, 'credits', 'day', '3000'),
    );
    expect(byAdmin.status).toBe(200);
    // Above the operator's cap: refused, even for the reseller.
    const over = await reseller.request(
      'PUT',
      `/reseller/customers/${customerId}/spend-caps`,
      cap(null, 'credits', 'day', '4000'),
    );
    expect(over.status).toBe(422);
    expect(over.body.errors.limit).toEqual(['At most 3000 for this account.']);
    const keys = await reseller.request('POST', `/reseller/customers/${customerId}/api-keys`, {
      body: { name: 'k' },
    });
    const keyId = keys.body.data.key.id;
    const management = await createManagementKey(reseller, ['customers:read', 'customers:write']);
    const keyCap = await managementCall(
      context,
      management.secret,
      'PUT',
      `/reseller-management/customers/${customerId}/spend-caps`,
      cap(keyId, 'tokens', 'week', '700'),
    );
    expect(keyCap.status).toBe(200);
    const listed = await managementCall(
      context,
      management.secret,
      'GET',
      `/reseller-management/customers/${customerId}/spend-caps`,
    );
    expect(
      listed.body.data.caps.map((each: { setBy: string; keyId: string | null }) => [each.setBy, each.keyId]),
    ).toEqual([
      ['reseller', null],
      ['admin', null],
      ['reseller', keyId],
    ]);
    // Another reseller's customer is not found.
    const stranger = await member(context, 'caps-stranger', { reseller: true });
    expect((await stranger.request('GET', `/reseller/customers/${customerId}/spend-caps`)).status).toBe(404);
  });
});
