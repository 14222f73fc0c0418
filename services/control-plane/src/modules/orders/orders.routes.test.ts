import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commerceEnv,
  createPromotionAs,
  expectLedgerConsistent,
  grantsOf,
  HUGE_PRICE,
  type Shopper,
  seedCommerceCatalog,
  shopper,
} from '../../../test/commerce.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';

let context: TestContext;
let admin: Shopper;

beforeAll(async () => {
  context = await createTestContext('commerce-orders', commerceEnv());
  await seedCommerceCatalog(context);
  admin = await shopper(context, { admin: true });
});
afterAll(async () => {
  await expectLedgerConsistent(context);
  await context.publicApp.mailer.drain();
  await context.close();
});

const promotion = (body: Record<string, unknown>) => createPromotionAs(admin, body);

describe('orders paid through the development provider', () => {
  it('fixes the price with a percent promotion, pays once however often verify runs, and grants the package', async () => {
    const code = `TEN${Date.now()}`;
    await promotion({ code, kind: 'percent_off', percentOff: 15, packageIds: ['usd', 'jpy'] });
    const buyer = await shopper(context);

    const preview = await buyer.client.request('POST', '/promotions/preview', {
      body: { code: code.toLowerCase(), packageId: 'usd' },
    });
    expect(preview.status).toBe(200);
    // 15% of 19.99 USD is 2.9985: the discount rounds down to 2.99, the customer pays 17.00.
    expect(preview.body.data).toMatchObject({
      priceBefore: { amount: '1999', currency: 'USD', exponent: 2 },
      discount: { amount: '299', currency: 'USD', exponent: 2 },
      priceAfter: { amount: '1700', currency: 'USD', exponent: 2 },
    });

    const created = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'usd', promotionCode: code },
    });
    expect(created.status).toBe(201);
    const order = created.body.data;
    expect(order).toMatchObject({
      status: 'pending',
      provider: 'development',
      price: { amount: '1700', currency: 'USD', exponent: 2 },
      grants: { tokens: '1000' },
      promotionCode: code,
      payment: null,
    });

    const early = await buyer.client.request('POST', `/orders/${order.id}/payment/verify`);
    expect(early.status).toBe(422);
    const notStarted = await buyer.client.request('GET', `/orders/${order.id}/payment`);
    expect(notStarted.status).toBe(404);
    expect(notStarted.body.code).toBe('not_found');

    const started = await buyer.client.request('POST', `/orders/${order.id}/payment`);
    expect(started.status).toBe(200);
    expect(started.body.data.payment).toMatchObject({
      provider: 'development',
      nextStep: 'verify',
      status: 'pending',
    });
    // The payment once started is read back as it was answered.
    const read = await buyer.client.request('GET', `/orders/${order.id}/payment`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(started.body.data);

    const verifies = await Promise.all(
      Array.from({ length: 10 }, () => buyer.client.request('POST', `/orders/${order.id}/payment/verify`)),
    );
    expect(verifies.map((answer) => answer.status)).toEqual(Array(10).fill(200));
    expect(verifies[0]!.body.data).toMatchObject({ status: 'paid', payment: { status: 'succeeded' } });
    const readPaid = await buyer.client.request('GET', `/orders/${order.id}/payment`);
    expect(readPaid.body.data).toMatchObject({
      id: order.id,
      status: 'paid',
      payment: { provider: 'development', status: 'succeeded', amount: { amount: '1700', currency: 'USD' } },
    });

    const { entitlements, grants } = await grantsOf(context, buyer.accountId);
    expect(entitlements).toHaveLength(1);
    expect(grants).toHaveLength(1);
    const balance = await buyer.client.request('GET', '/me/balance');
    expect(balance.body.data.remaining.tokens).toBe('1000');

    const listed = await buyer.client.request('GET', '/orders?status=paid');
    expect(listed.body.data.items.map((item: { id: string }) => item.id)).toEqual([order.id]);
    await expectLedgerConsistent(context);
  });

  it('prices JPY with exponent 0 and rounds a percent discount down to a whole yen', async () => {
    const code = `YEN${Date.now()}`;
    await promotion({ code, kind: 'percent_off', percentOff: 15 });
    const buyer = await shopper(context);
    const created = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'jpy', promotionCode: code },
    });
    expect(created.status).toBe(201);
    // 15% of 999 JPY is 149.85: 149 off, 850 to pay.
    expect(created.body.data).toMatchObject({
      listPrice: { amount: '999', currency: 'JPY', exponent: 0 },
      discount: { amount: '149', currency: 'JPY', exponent: 0 },
      price: { amount: '850', currency: 'JPY', exponent: 0 },
    });
  });

  it('keeps amounts beyond 2^53 exact as strings, through the order, the payment and the grant', async () => {
    const buyer = await shopper(context);
    const created = await buyer.client.request('POST', '/orders', { body: { packageId: 'giant' } });
    expect(created.status).toBe(201);
    expect(created.body.data.price.amount).toBe(HUGE_PRICE);
    expect(created.body.data.grants.tokens).toBe('36028797018963968');
    const id = created.body.data.id;
    expect(
      (await buyer.client.request('POST', `/orders/${id}/payment`)).body.data.payment.amount.amount,
    ).toBe(HUGE_PRICE);
    const paid = await buyer.client.request('POST', `/orders/${id}/payment/verify`);
    expect(paid.status).toBe(200);
    expect(paid.body.data.price.amount).toBe(HUGE_PRICE);
    const balance = await buyer.client.request('GET', '/me/balance');
    expect(balance.body.data.remaining.tokens).toBe('36028797018963968');
  });

  it('amount off, bonus tokens and bonus credit are granted with the package', async () => {
    const off = `OFF${Date.now()}`;
    const bonus = `BONUS${Date.now()}`;
    const credit = `CREDIT${Date.now()}`;
    await promotion({
      code: off,
      kind: 'amount_off',
      amountOff: { amount: '500', currency: 'USD', exponent: 2 },
    });
    await promotion({ code: bonus, kind: 'bonus_tokens', bonus: '250' });
    await promotion({ code: credit, kind: 'bonus_credit', bonus: '7000' });
    const buyer = await shopper(context);
    const jpy = await buyer.client.request('POST', '/promotions/preview', {
      body: { code: off, packageId: 'jpy' },
    });
    expect(jpy.status).toBe(422);
    expect(jpy.body.errors.code[0]).toMatch(/USD/);

    for (const code of [off, bonus, credit]) {
      const created = await buyer.client.request('POST', '/orders', {
        body: { packageId: 'usd', promotionCode: code },
      });
      expect(created.status).toBe(201);
      await buyer.client.request('POST', `/orders/${created.body.data.id}/payment`);
      expect(
        (await buyer.client.request('POST', `/orders/${created.body.data.id}/payment/verify`)).status,
      ).toBe(200);
      if (code === off) expect(created.body.data.price.amount).toBe('1499');
    }
    const balance = await buyer.client.request('GET', '/me/balance');
    expect(balance.body.data.remaining).toEqual({ tokens: String(1000 + 1250 + 1000), credits: '7000' });
  });
});

describe('unpaid orders', () => {
  it('an account holds at most 10 pending orders, however many are made at once', async () => {
    const buyer = await shopper(context);
    const answers = await Promise.all(
      Array.from({ length: 25 }, () =>
        buyer.client.request('POST', '/orders', { body: { packageId: 'usd' } }),
      ),
    );
    const created = answers.filter((answer) => answer.status === 201);
    expect(created).toHaveLength(10);
    const refused = answers.filter((answer) => answer.status !== 201);
    expect(refused.map((answer) => answer.body.code)).toEqual(Array(15).fill('validation_failed'));
    expect(refused[0]!.body.errors.body[0]).toMatch(/at most 10 unpaid orders/);
    const pending = await buyer.client.request('GET', '/orders?status=pending&limit=200');
    expect(pending.body.data.items).toHaveLength(10);

    // A cancelled or paid order makes room again.
    const [first, second] = created.map((answer) => answer.body.data.id as string);
    await buyer.client.request('POST', `/orders/${first}/cancel`);
    await buyer.client.request('POST', `/orders/${second}/payment`);
    expect((await buyer.client.request('POST', `/orders/${second}/payment/verify`)).status).toBe(200);
    for (const status of [201, 201, 422]) {
      const next = await buyer.client.request('POST', '/orders', { body: { packageId: 'usd' } });
      expect(next.status).toBe(status);
    }
  });
});

describe('another account', () => {
  it('cannot read, pay, verify, cancel or refund an order that is not its own (not_found)', async () => {
    const owner = await shopper(context);
    const stranger = await shopper(context);
    const created = await owner.client.request('POST', '/orders', { body: { packageId: 'usd' } });
    const id = created.body.data.id;
    for (const [method, path] of [
      ['GET', `/orders/${id}`],
      ['GET', `/orders/${id}/payment`],
      ['POST', `/orders/${id}/payment`],
      ['POST', `/orders/${id}/payment/verify`],
      ['POST', `/orders/${id}/cancel`],
    ] as const) {
      const answer = await stranger.client.request(method, path);
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.body.code).toBe('not_found');
    }
    expect((await stranger.client.request('POST', `/admin/orders/${id}/refund`)).status).toBe(403);
    expect((await stranger.client.request('GET', '/orders')).body.data.items).toEqual([]);
    expect((await owner.client.request('GET', `/orders/${id}`)).body.data.status).toBe('pending');
  });
});
