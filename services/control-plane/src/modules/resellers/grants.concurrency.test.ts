import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { balancesOf } from '../../../test/kit.ts';
import {
  createManagementKey,
  customerOf,
  fundedReseller as fundedResellerOf,
  type Member,
  managementCall,
  member,
  seedCatalog,
} from '../../../test/resellers.ts';
import { verifyLedger } from '../billing/ledger-check.ts';

let context: TestContext;
let admin: Member;

beforeAll(async () => {
  context = await createTestContext('reseller-grants', {
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

describe('concurrency', () => {
  it('100 concurrent grants from a reseller holding enough for 10: exactly 10 succeed, both ledgers agree', async () => {
    const reseller = await fundedReseller('race', { packages: 1, credits: '1000' });
    const customerId = await customerOf(context, reseller);
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
    expect(await balancesOf(context.deps, reseller.id)).toMatchObject({ tokens: 0n, credits: 0n });
    expect(await balancesOf(context.deps, customerId)).toMatchObject({ tokens: 1000n, credits: 1000n });
    expect(await verifyLedger(context.deps.db, reseller.id)).toEqual([]);
    expect(await verifyLedger(context.deps.db, customerId)).toEqual([]);
  }, 120_000);

  it('20 concurrent retries of one grant with the same Idempotency-Key make one grant; another body is 422', async () => {
    const reseller = await fundedReseller('retry', { credits: '1000' });
    const customerId = await customerOf(context, reseller);
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
    expect(await balancesOf(context.deps, customerId)).toMatchObject({ credits: 100n });
    const different = await call({ credits: '200' });
    expect(different.status).toBe(422);
    expect(different.body.code).toBe('validation_failed');
    expect(await balancesOf(context.deps, reseller.id)).toMatchObject({ credits: 900n });
  }, 120_000);
});
