import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balancesOf } from '../../test-kit.ts';
import { createTestContext, type TestContext } from '../../testing.ts';
import { createClient, latestEmailText, uniqueEmail } from '../auth/test-client.ts';
import { verifyLedger } from '../billing/ledger-check.ts';
import {
  createManagementKey,
  type Member,
  managementCall,
  member,
  seedCatalog,
} from './resellers.test-support.ts';

let context: TestContext;
let admin: Member;

beforeAll(async () => {
  context = await createTestContext('resellers', {
    TRUST_PROXY: 'true',
    MANAGEMENT_KEY_REQUESTS_PER_MINUTE: '40',
  });
  await seedCatalog(context);
  admin = await member(context, 'admin', { admin: true });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  expect(await verifyLedger(context.deps.db)).toEqual([]);
  await context.close();
});

/** A reseller made so by the admin over HTTP, funded by admin grants with notes. */
async function fundedReseller(label: string, funding: { packages?: number; credits?: string } = {}) {
  const account = await member(context, label);
  const promoted = await admin.request('PATCH', `/admin/accounts/${account.id}/roles`, {
    body: { reseller: true },
  });
  expect(promoted.status).toBe(200);
  expect(promoted.body.data.isReseller).toBe(true);
  for (let index = 0; index < (funding.packages ?? 0); index += 1) {
    const granted = await admin.request('POST', `/admin/accounts/${account.id}/grants`, {
      body: { packageId: 'small', note: 'reseller stock' },
    });
    expect(granted.status).toBe(201);
  }
  if (funding.credits) {
    const granted = await admin.request('POST', `/admin/accounts/${account.id}/grants`, {
      body: { credits: funding.credits, note: 'reseller credit' },
    });
    expect(granted.status).toBe(201);
  }
  return account;
}

async function customerOf(reseller: Member, label = 'customer'): Promise<string> {
  const created = await reseller.request('POST', '/reseller/customers', {
    body: { email: uniqueEmail(label) },
  });
  expect(created.status).toBe(201);
  return created.body.data.id;
}

describe('reseller area (session)', () => {
  it('creates a customer who gets an email to set its password, and can then sign in', async () => {
    const reseller = await fundedReseller('creator');
    const email = uniqueEmail('invited');
    const created = await reseller.request('POST', '/reseller/customers', {
      body: { email, displayName: 'Ada' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      email,
      resellerId: reseller.id,
      isAdmin: false,
      isReseller: false,
    });
    await context.publicApp.mailer.drain();
    const text = await latestEmailText(context, email, 'password_setup');
    const token = /token: ([0-9a-f]{64})/.exec(text)?.[1];
    expect(token).toBeDefined();
    const customer = createClient(context);
    const reset = await customer.request('POST', '/auth/reset-password', {
      body: { token, password: 'a-new-long-password-1' },
    });
    expect(reset.status).toBeLessThan(300);
    expect((await customer.logIn(email, 'a-new-long-password-1')).status).toBe(200);
    const listed = await reseller.request('GET', '/reseller/customers');
    expect(listed.body.data.items.map((item: { id: string }) => item.id)).toEqual([created.body.data.id]);
    const again = await reseller.request('POST', '/reseller/customers', { body: { email } });
    expect(again.status).toBe(422);
  });

  it('grants from its own holdings: a ledger row on both sides, never more than it holds', async () => {
    const reseller = await fundedReseller('granter', { packages: 1, credits: '500' });
    const customerId = await customerOf(reseller);
    const tokens = await reseller.request('POST', `/reseller/customers/${customerId}/grants`, {
      body: { packageId: 'small', tokens: '400' },
    });
    expect(tokens.status).toBe(201);
    expect(tokens.body.data).toMatchObject({ customerId, packageId: 'small', tokens: '400', credits: '0' });
    const credits = await reseller.request('POST', `/reseller/customers/${customerId}/grants`, {
      body: { credits: '200', note: 'welcome' },
    });
    expect(credits.status).toBe(201);
    expect(await balancesOf(context.deps.db, reseller.id)).toMatchObject({ tokens: 600n, credits: 300n });
    expect(await balancesOf(context.deps.db, customerId)).toMatchObject({ tokens: 400n, credits: 200n });

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
    const theirCustomer = await customerOf(other);
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
    expect(await balancesOf(context.deps.db, reseller.id)).toMatchObject({ credits: 100n });
  });

  it("lists, creates, disables and revokes a customer's inference keys", async () => {
    const reseller = await fundedReseller('keys');
    const customerId = await customerOf(reseller);
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

describe('management keys', () => {
  it('are created with scopes (secret once), listed masked with last use, and refused without the scope', async () => {
    const reseller = await fundedReseller('software', { credits: '100' });
    const customerId = await customerOf(reseller);
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
    const customerId = await customerOf(reseller);
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

describe('concurrency', () => {
  it('100 concurrent grants from a reseller holding enough for 10: exactly 10 succeed, both ledgers agree', async () => {
    const reseller = await fundedReseller('race', { packages: 1, credits: '1000' });
    const customerId = await customerOf(reseller);
    const key = await createManagementKey(reseller, ['grants:write']);
    const credits = await Promise.all(
      Array.from({ length: 100 }, () =>
        reseller.request('POST', `/reseller/customers/${customerId}/grants`, { body: { credits: '100' } }),
      ),
    );
    expect(credits.filter((response) => response.status === 201)).toHaveLength(10);
    expect(credits.filter((response) => response.body?.code === 'insufficient_credits')).toHaveLength(90);
    const tokens = await Promise.all(
      Array.from({ length: 100 }, (_, index) =>
        // Spread over a session and a management key; both draw on the same holdings.
        index % 2 === 0
          ? reseller.request('POST', `/reseller/customers/${customerId}/grants`, {
              body: { packageId: 'small', tokens: '100' },
            })
          : managementCall(
              context,
              key.secret,
              'POST',
              `/reseller-management/customers/${customerId}/grants`,
              {
                body: { packageId: 'small', tokens: '100' },
              },
            ),
      ),
    );
    const refusedCodes = new Set(tokens.filter((r) => r.status !== 201).map((r) => r.body?.code));
    expect(tokens.filter((response) => response.status === 201)).toHaveLength(10);
    // The management key's own rate limit may refuse some; nothing else but the quota code.
    expect(
      [...refusedCodes].every((code) => code === 'insufficient_tokens' || code === 'rate_limit_exceeded'),
    ).toBe(true);
    expect(await balancesOf(context.deps.db, reseller.id)).toMatchObject({ tokens: 0n, credits: 0n });
    expect(await balancesOf(context.deps.db, customerId)).toMatchObject({ tokens: 1000n, credits: 1000n });
    expect(await verifyLedger(context.deps.db, reseller.id)).toEqual([]);
    expect(await verifyLedger(context.deps.db, customerId)).toEqual([]);
  }, 120_000);

  it('20 concurrent retries of one grant with the same Idempotency-Key make one grant; another body is 422', async () => {
    const reseller = await fundedReseller('retry', { credits: '1000' });
    const customerId = await customerOf(reseller);
    const key = await createManagementKey(reseller, ['grants:write']);
    const call = (body: unknown) =>
      managementCall(context, key.secret, 'POST', `/reseller-management/customers/${customerId}/grants`, {
        body,
        headers: { 'idempotency-key': 'order-42' },
      });
    const responses = await Promise.all(Array.from({ length: 20 }, () => call({ credits: '100' })));
    expect(responses.filter((response) => response.status === 201)).toHaveLength(1);
    expect(responses.filter((response) => response.status === 200)).toHaveLength(19);
    expect(new Set(responses.map((response) => response.body.data.grantId)).size).toBe(1);
    expect(await balancesOf(context.deps.db, customerId)).toMatchObject({ credits: 100n });
    const different = await call({ credits: '200' });
    expect(different.status).toBe(422);
    expect(different.body.code).toBe('validation_failed');
    expect(await balancesOf(context.deps.db, reseller.id)).toMatchObject({ credits: 900n });
  }, 120_000);
});
