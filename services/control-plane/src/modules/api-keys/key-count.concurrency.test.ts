import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import {
  createManagementKey,
  customerOf,
  fundedReseller,
  type Member,
  managementCall,
  member,
  seedCatalog,
} from '../../../test/resellers.ts';

// Small limits, so that a burst many times larger than the room left shows whether it holds.
const KEYS_LIMIT = 5;
const MANAGEMENT_KEYS_LIMIT = 3;
const BURST = 30;

let context: TestContext;
let admin: Member;

beforeAll(async () => {
  context = await createTestContext('key-count', {
    TRUST_PROXY: 'true',
    KEYS_PER_ACCOUNT_LIMIT: String(KEYS_LIMIT),
    MANAGEMENT_KEYS_PER_RESELLER_LIMIT: String(MANAGEMENT_KEYS_LIMIT),
  });
  await seedCatalog(context);
  admin = await member(context, 'admin', { admin: true });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

function outcomes(responses: { status: number; body: { code?: string } | null }[]) {
  return {
    created: responses.filter((response) => response.status === 201).length,
    refused: responses.filter(
      (response) => response.status === 422 && response.body?.code === 'validation_failed',
    ).length,
  };
}

describe('key limits under parallel requests', () => {
  it(`${BURST} parallel creations from the dashboard leave exactly the account's limit`, async () => {
    const client = await member(context, 'burst');
    const responses = await Promise.all(
      Array.from({ length: BURST }, (_, index) =>
        client.request('POST', '/me/api-keys', { body: { name: `k${index}` } }),
      ),
    );
    expect(outcomes(responses)).toEqual({ created: KEYS_LIMIT, refused: BURST - KEYS_LIMIT });
    const listed = await client.request('GET', '/me/api-keys');
    expect(listed.body.data).toHaveLength(KEYS_LIMIT);
  }, 60_000);

  it(`${BURST} parallel creations through a management key leave exactly the customer's limit`, async () => {
    const reseller = await fundedReseller(context, admin, 'burst-reseller');
    const customerId = await customerOf(context, reseller);
    const key = await createManagementKey(reseller, ['keys:write']);
    const responses = await Promise.all(
      Array.from({ length: BURST }, (_, index) =>
        managementCall(context, key.secret, 'POST', `/reseller-management/customers/${customerId}/api-keys`, {
          body: { name: `k${index}` },
        }),
      ),
    );
    expect(outcomes(responses)).toEqual({ created: KEYS_LIMIT, refused: BURST - KEYS_LIMIT });
    const listed = await reseller.request('GET', `/reseller/customers/${customerId}/api-keys`);
    expect(listed.body.data).toHaveLength(KEYS_LIMIT);
  }, 60_000);

  it(`${BURST} parallel management-key creations leave exactly the reseller's limit`, async () => {
    const reseller = await fundedReseller(context, admin, 'burst-management');
    const responses = await Promise.all(
      Array.from({ length: BURST }, (_, index) =>
        reseller.request('POST', '/reseller/management-keys', {
          body: { name: `m${index}`, scopes: ['customers:read'] },
        }),
      ),
    );
    expect(outcomes(responses)).toEqual({
      created: MANAGEMENT_KEYS_LIMIT,
      refused: BURST - MANAGEMENT_KEYS_LIMIT,
    });
    const listed = await reseller.request('GET', '/reseller/management-keys');
    expect(listed.body.data).toHaveLength(MANAGEMENT_KEYS_LIMIT);
  }, 60_000);
});
