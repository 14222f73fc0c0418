import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNowhere } from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import {
  createManagementKey,
  customerOf,
  fundedReseller as fundedResellerOf,
  type Member,
  managementCall,
  managementSecrets,
  member,
  seedCatalog,
} from '../../../test/resellers.ts';
import { verifyLedger } from '../billing/ledger-check.ts';

let context: TestContext;
let admin: Member;

beforeAll(async () => {
  context = await createTestContext('reseller-management', {
    TRUST_PROXY: 'true',
    MANAGEMENT_KEY_REQUESTS_PER_MINUTE: '40',
  });
  await seedCatalog(context);
  admin = await member(context, 'admin', { admin: true });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  // Secrets appear in the one answer that created them, never in a log line.
  expect(managementSecrets.length).toBeGreaterThan(0);
  expectNowhere(context, managementSecrets, []);
  expect(await verifyLedger(context.deps.db)).toEqual([]);
  await context.close();
});

const fundedReseller = (label: string, funding: { packages?: number; credits?: string } = {}) =>
  fundedResellerOf(context, admin, label, funding);

describe('management keys', () => {
  it('are created with scopes (secret once), listed masked with last use, and refused without the scope', async () => {
    const reseller = await fundedReseller('software', { credits: '100' });
    const customerId = await customerOf(context, reseller);
    const key = await createManagementKey(reseller, ['customers:read', 'usage:read']);
    expect(key.secret).toMatch(/^mk-tg-[0-9A-Za-z]{46}$/);

    const listed = await managementCall(context, key.secret, 'GET', '/reseller-management/customers');
    expect(listed.status).toBe(200);
    expect(listed.body.data.items.map((item: { id: string }) => item.id)).toEqual([customerId]);
    const usage = await managementCall(
      context,
      key.secret,
      'GET',
      `/reseller-management/customers/${customerId}/usage`,
    );
    expect(usage.status).toBe(200);
    expect(usage.body.data.balance.remaining).toEqual({ tokens: '0', credits: '0' });

    const refused = await managementCall(
      context,
      key.secret,
      'POST',
      `/reseller-management/customers/${customerId}/grants`,
      {
        body: { credits: '1' },
      },
    );
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('forbidden');

    const keys = await reseller.request('GET', '/reseller/management-keys');
    expect(keys.body.data).toHaveLength(1);
    expect(keys.body.data[0]).toMatchObject({
      id: key.id,
      scopes: ['customers:read', 'usage:read'],
      state: 'active',
    });
    expect(keys.body.data[0].lastUsedAt).not.toBeNull();
    expect(JSON.stringify(keys.body)).not.toContain(key.secret);
  });

  it('are never accepted outside /reseller-management, and inference keys never inside', async () => {
    const reseller = await fundedReseller('outside');
    const customerId = await customerOf(context, reseller);
    const key = await createManagementKey(reseller, ['customers:read', 'keys:write']);
    for (const path of ['/me', '/reseller/customers', '/me/api-keys']) {
      const response = await managementCall(context, key.secret, 'GET', path);
      expect(response.status, path).toBe(401);
      expect(response.body.code).toBe('unauthenticated');
    }
    // Even beside a valid session cookie.
    const withSession = await reseller.request('GET', '/reseller/customers', {
      headers: { authorization: `Bearer ${key.secret}` },
    });
    expect(withSession.status).toBe(401);
    const inference = await managementCall(
      context,
      key.secret,
      'POST',
      `/reseller-management/customers/${customerId}/api-keys`,
      {
        body: { name: 'k' },
      },
    );
    expect(inference.status).toBe(201);
    const withInferenceKey = await managementCall(
      context,
      inference.body.data.secret,
      'GET',
      '/reseller-management/customers',
    );
    expect(withInferenceKey.status).toBe(401);
    expect(withInferenceKey.body.code).toBe('unauthenticated');
    const session = await reseller.request('GET', '/reseller-management/customers');
    expect(session.status).toBe(401);
  });

  it('stop at once when revoked, when expired, and when the reseller loses its permission or is suspended', async () => {
    const reseller = await fundedReseller('revoker');
    const key = await createManagementKey(reseller, ['customers:read']);
    const soon = await createManagementKey(reseller, ['customers:read'], {
      expiresAt: new Date(context.clock.now().getTime() + 60_000).toISOString(),
    });
    expect((await managementCall(context, key.secret, 'GET', '/reseller-management/customers')).status).toBe(
      200,
    );
    expect((await managementCall(context, soon.secret, 'GET', '/reseller-management/customers')).status).toBe(
      200,
    );

    const suspended = await admin.request('PATCH', `/admin/accounts/${reseller.id}/status`, {
      body: { status: 'suspended' },
    });
    expect(suspended.status).toBe(200);
    expect(
      (await managementCall(context, key.secret, 'GET', '/reseller-management/customers')).body.code,
    ).toBe('account_suspended');
    await admin.request('PATCH', `/admin/accounts/${reseller.id}/status`, { body: { status: 'active' } });
    await admin.request('PATCH', `/admin/accounts/${reseller.id}/roles`, { body: { reseller: false } });
    expect((await managementCall(context, key.secret, 'GET', '/reseller-management/customers')).status).toBe(
      403,
    );
    await admin.request('PATCH', `/admin/accounts/${reseller.id}/roles`, { body: { reseller: true } });

    const revoked = await reseller.request('DELETE', `/reseller/management-keys/${key.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data.state).toBe('revoked');
    const after = await managementCall(context, key.secret, 'GET', '/reseller-management/customers');
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('unauthenticated');

    context.clock.advance(61_000);
    expect((await managementCall(context, soon.secret, 'GET', '/reseller-management/customers')).status).toBe(
      401,
    );
    const other = await fundedReseller('not-owner');
    expect((await other.request('DELETE', `/reseller/management-keys/${soon.id}`)).status).toBe(404);
  });

  it('are rate limited per key (rate_limit_exceeded with Retry-After)', async () => {
    const reseller = await fundedReseller('busy');
    const key = await createManagementKey(reseller, ['customers:read']);
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof managementCall>> | undefined;
    for (let index = 0; index < 41; index += 1) {
      last = await managementCall(context, key.secret, 'GET', '/reseller-management/customers');
      statuses.push(last.status);
    }
    expect(statuses.slice(0, 40).every((status) => status === 200)).toBe(true);
    expect(last?.status).toBe(429);
    expect(last?.body.code).toBe('rate_limit_exceeded');
    expect(Number(last?.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
