/**
 * Every route that defines or moves money refuses what a Postgres bigint (2^63-1) cannot hold with
 * validation_failed naming the field, and moves nothing: never a server_error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commerceEnv,
  createPromotionAs,
  expectLedgerConsistent,
  type Shopper,
  seedCommerceCatalog,
  shopper,
} from '../../test/commerce.ts';
import { createTestContext, type TestContext } from '../../test/context.ts';
import { balancesOf } from '../../test/kit.ts';
import { customerOf, fundedReseller } from '../../test/resellers.ts';

const MAX = '9223372036854775807';
const PAST_MAX = '9223372036854775808';
/** The largest grant a single request takes (18 digits); ten of them pass MAX. */
const BIG = '999999999999999999';

let context: TestContext;
let admin: Shopper;

beforeAll(async () => {
  context = await createTestContext('money-bounds', commerceEnv());
  await seedCommerceCatalog(context);
  admin = await shopper(context, { admin: true });
});
afterAll(async () => {
  await expectLedgerConsistent(context);
  await context.publicApp.mailer.drain();
  await context.close();
});

async function fillCredit(accountId: string, grants: number): Promise<void> {
  for (let index = 0; index < grants; index += 1) {
    const granted = await admin.client.request('POST', `/admin/accounts/${accountId}/grants`, {
      body: { credits: BIG, note: 'fill' },
    });
    expect(granted.status).toBe(201);
  }
}

function expectRefused(answer: { status: number; body: { code: string; errors: object } }, field: string) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(422);
  expect(answer.body.code).toBe('validation_failed');
  expect(Object.keys(answer.body.errors)).toContain(field);
}

describe('amounts past 2^63-1', () => {
  it('an admin grant or adjustment that would carry a balance past it is refused; the balance stays', async () => {
    const customer = await shopper(context);
    await fillCredit(customer.accountId, 9);
    const held = 9n * BigInt(BIG);
    expect((await balancesOf(context.deps, customer.accountId)).credits).toBe(held);

    const grant = await admin.client.request('POST', `/admin/accounts/${customer.accountId}/grants`, {
      body: { credits: BIG, note: 'one too many' },
    });
    expectRefused(grant, 'credits');
    expect(grant.body.errors.credits[0]).toContain(MAX);
    const adjustment = await admin.client.request(
      'POST',
      `/admin/accounts/${customer.accountId}/credit-adjustments`,
      { body: { amount: BIG, note: 'one too many' } },
    );
    expectRefused(adjustment, 'amount');
    expect((await balancesOf(context.deps, customer.accountId)).credits).toBe(held);
  });

  it('a reseller transfer that would carry the customer past it is refused; the reseller keeps its credit', async () => {
    const reseller = await fundedReseller(context, admin.client, 'bounds-reseller', { credits: BIG });
    const customerId = await customerOf(context, reseller);
    await fillCredit(customerId, 9);
    const transfer = await reseller.request('POST', `/reseller/customers/${customerId}/grants`, {
      body: { credits: BIG },
    });
    expectRefused(transfer, 'credits');
    expect((await balancesOf(context.deps, reseller.id)).credits).toBe(BigInt(BIG));
    expect((await balancesOf(context.deps, customerId)).credits).toBe(9n * BigInt(BIG));
  });

  it('a promotion amount, minimum or bonus past it is refused', async () => {
    const base = { code: `HUGE${Date.now()}` };
    for (const [body, field] of [
      [
        { kind: 'amount_off', amountOff: { amount: PAST_MAX, currency: 'USD', exponent: 2 } },
        'amountOff.amount',
      ],
      [
        {
          kind: 'percent_off',
          percentOff: 10,
          minAmount: { amount: PAST_MAX, currency: 'USD', exponent: 2 },
        },
        'minAmount.amount',
      ],
      [{ kind: 'bonus_tokens', bonus: PAST_MAX }, 'bonus'],
      [{ kind: 'bonus_credit', bonus: '1'.repeat(40) }, 'bonus'],
    ] as const) {
      expectRefused(
        await admin.client.request('POST', '/admin/promotions', { body: { ...base, ...body } }),
        field,
      );
    }
    const listed = await admin.client.request('GET', '/admin/promotions');
    expect(listed.body.data.items.map((item: { code: string }) => item.code)).not.toContain(base.code);
  });

  it('an order whose bonus could never be granted is refused when made, not left unpayable', async () => {
    const tokensCode = `BIGTOKENS${Date.now()}`;
    await createPromotionAs(admin, { code: tokensCode, kind: 'bonus_tokens', bonus: MAX });
    const buyer = await shopper(context);
    const preview = await buyer.client.request('POST', '/promotions/preview', {
      body: { code: tokensCode, packageId: 'usd' },
    });
    expectRefused(preview, 'code');
    const order = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'usd', promotionCode: tokensCode, provider: 'development' },
    });
    expectRefused(order, 'promotionCode');

    const creditsCode = `BIGCREDIT${Date.now()}`;
    await createPromotionAs(admin, { code: creditsCode, kind: 'bonus_credit', bonus: MAX });
    await fillCredit(buyer.accountId, 1);
    const refused = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'usd', promotionCode: creditsCode, provider: 'development' },
    });
    expectRefused(refused, 'promotionCode');
    expect((await buyer.client.request('GET', '/orders')).body.data.items).toHaveLength(0);

    // An account with room for it buys and is granted the bonus.
    const roomy = await shopper(context);
    const created = await roomy.client.request('POST', '/orders', {
      body: { packageId: 'usd', promotionCode: creditsCode, provider: 'development' },
    });
    expect(created.status).toBe(201);
    const paid = await roomy.client.request('POST', `/orders/${created.body.data.id}/payment`);
    expect(paid.status).toBe(200);
    await roomy.client.request('POST', `/orders/${created.body.data.id}/payment/verify`);
    expect((await balancesOf(context.deps, roomy.accountId)).credits).toBe(BigInt(MAX));
  });
});
