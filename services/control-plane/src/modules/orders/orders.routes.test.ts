import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../testing.ts';
import { reconcilePaymentsOnce } from '../payments/payment-reconciler.ts';
import {
  commerceEnv,
  expectLedgerConsistent,
  grantsOf,
  HUGE_PRICE,
  type Shopper,
  seedCommerceCatalog,
  shopper,
} from './commerce.test-support.ts';

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

async function promotion(body: Record<string, unknown>) {
  const created = await admin.client.request('POST', '/admin/promotions', { body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data;
}

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

    const started = await buyer.client.request('POST', `/orders/${order.id}/payment`);
    expect(started.status).toBe(200);
    expect(started.body.data.payment).toMatchObject({
      provider: 'development',
      nextStep: 'verify',
      status: 'pending',
    });

    const verifies = await Promise.all(
      Array.from({ length: 10 }, () => buyer.client.request('POST', `/orders/${order.id}/payment/verify`)),
    );
    expect(verifies.map((answer) => answer.status)).toEqual(Array(10).fill(200));
    expect(verifies[0]!.body.data).toMatchObject({ status: 'paid', payment: { status: 'succeeded' } });

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

describe('promotions', () => {
  it('preview says why a code does not apply and reserves nothing', async () => {
    const code = `ONLYJPY${Date.now()}`;
    const created = await promotion({
      code,
      kind: 'percent_off',
      percentOff: 50,
      packageIds: ['jpy'],
      totalLimit: 1,
    });
    const buyer = await shopper(context);
    const unknown = await buyer.client.request('POST', '/promotions/preview', {
      body: { code: 'NO-SUCH-CODE', packageId: 'usd' },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toMatchObject({ code: 'validation_failed', errors: { code: [expect.any(String)] } });
    const wrongPackage = await buyer.client.request('POST', '/promotions/preview', {
      body: { code, packageId: 'usd' },
    });
    expect(wrongPackage.body.errors.code[0]).toMatch(/does not apply/);
    for (let i = 0; i < 3; i += 1) {
      expect(
        (await buyer.client.request('POST', '/promotions/preview', { body: { code, packageId: 'jpy' } }))
          .status,
      ).toBe(200);
    }
    const listed = await admin.client.request('GET', '/admin/promotions');
    const row = listed.body.data.items.find((item: { id: string }) => item.id === created.id);
    expect(row.redemptionsTaken).toBe(0);
  });

  it('a total limit of 1 under 100 concurrent orders: exactly one holds it; it returns when that order expires', async () => {
    const code = `ONCE${Date.now()}`;
    const created = await promotion({ code, kind: 'percent_off', percentOff: 20, totalLimit: 1 });
    const buyer = await shopper(context);
    const answers = await Promise.all(
      Array.from({ length: 100 }, () =>
        buyer.client.request('POST', '/orders', { body: { packageId: 'usd', promotionCode: code } }),
      ),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.filter((status) => status === 422)).toHaveLength(99);
    const holder = answers.find((answer) => answer.status === 201)!.body.data;
    const refused = answers.find((answer) => answer.status === 422)!.body;
    expect(refused.errors.promotionCode[0]).toMatch(/fully redeemed/);

    // Unpaid past its time: the reconciler expires it and the redemption comes back.
    context.clock.advance(6 * 60_000);
    const pass = await reconcilePaymentsOnce(context.deps);
    expect(pass.expired).toBeGreaterThanOrEqual(1);
    const expired = await buyer.client.request('GET', `/orders/${holder.id}`);
    expect(expired.body.data.status).toBe('expired');
    const next = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'usd', promotionCode: code },
    });
    expect(next.status).toBe(201);
    const listed = await admin.client.request('GET', '/admin/promotions');
    expect(
      listed.body.data.items.find((item: { id: string }) => item.id === created.id).redemptionsTaken,
    ).toBe(1);
  });

  it('a per-account limit counts held and consumed redemptions; a cancelled order returns its hold', async () => {
    const code = `PERACC${Date.now()}`;
    await promotion({ code, kind: 'bonus_tokens', bonus: '10', perAccountLimit: 1 });
    const buyer = await shopper(context);
    const first = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'usd', promotionCode: code },
    });
    expect(first.status).toBe(201);
    const second = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'usd', promotionCode: code },
    });
    expect(second.body.errors.promotionCode[0]).toMatch(/already used/);
    const cancelled = await buyer.client.request('POST', `/orders/${first.body.data.id}/cancel`);
    expect(cancelled.body.data.status).toBe('cancelled');
    const third = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'usd', promotionCode: code },
    });
    expect(third.status).toBe(201);
  });
});

describe('manual payments and admin actions', () => {
  it('waits for an admin: verify answers payment_pending; confirm pays once and is audited; reject fails', async () => {
    const buyer = await shopper(context);
    const created = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'usd', provider: 'manual' },
    });
    const id = created.body.data.id;
    const started = await buyer.client.request('POST', `/orders/${id}/payment`);
    expect(started.body.data.payment).toMatchObject({ nextStep: 'wait', instructions: expect.any(String) });
    expect(started.body.data.payment.reference).toMatch(/^TG-/);

    const pending = await buyer.client.request('POST', `/orders/${id}/payment/verify`);
    expect(pending.status).toBe(402);
    expect(pending.body.code).toBe('payment_pending');
    expect(Number(pending.headers.get('retry-after'))).toBeGreaterThan(0);

    expect((await buyer.client.request('POST', `/admin/orders/${id}/payment/confirm`)).status).toBe(403);
    const confirms = await Promise.all(
      Array.from({ length: 5 }, () =>
        admin.client.request('POST', `/admin/orders/${id}/payment/confirm`, {
          body: { note: 'transfer seen' },
        }),
      ),
    );
    expect(confirms.map((answer) => answer.status)).toEqual(Array(5).fill(200));
    expect((await grantsOf(context, buyer.accountId)).grants).toHaveLength(1);
    expect((await buyer.client.request('POST', `/orders/${id}/payment/verify`)).body.data.status).toBe(
      'paid',
    );

    const audit = await context.deps.db
      .selectFrom('key_reveal_audit')
      .select(['account_id', 'outcome'])
      .where('account_id', '=', admin.accountId)
      .where('outcome', '=', 'order.confirm_payment')
      .execute();
    expect(audit.length).toBe(1);

    const other = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'usd', provider: 'manual' },
    });
    await buyer.client.request('POST', `/orders/${other.body.data.id}/payment`);
    const rejected = await admin.client.request('POST', `/admin/orders/${other.body.data.id}/payment/reject`);
    expect(rejected.body.data.status).toBe('failed');
    const failed = await buyer.client.request('POST', `/orders/${other.body.data.id}/payment/verify`);
    expect(failed.status).toBe(402);
    expect(failed.body.code).toBe('payment_verification_failed');

    const filtered = await admin.client.request(
      'GET',
      `/admin/orders?accountId=${buyer.accountId}&status=failed`,
    );
    expect(filtered.body.data.items.map((item: { id: string }) => item.id)).toEqual([other.body.data.id]);
  });

  it('refund takes back only the unused rest of the grant through the ledger', async () => {
    const buyer = await shopper(context);
    const created = await buyer.client.request('POST', '/orders', { body: { packageId: 'usd' } });
    const id = created.body.data.id;
    await buyer.client.request('POST', `/orders/${id}/payment`);
    await buyer.client.request('POST', `/orders/${id}/payment/verify`);
    // 300 tokens used before the refund stay used.
    await context.deps.db.transaction().execute(async (trx) => {
      const { entitlement_id } = await trx
        .selectFrom('orders')
        .select('entitlement_id')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      await trx
        .updateTable('entitlements')
        .set({ remaining: 700n })
        .where('id', '=', entitlement_id!)
        .execute();
      await trx
        .insertInto('ledger_entries')
        .values({
          account_id: buyer.accountId,
          entitlement_id,
          kind: 'settle',
          available_delta: -300n,
          amount: 300n,
          cause: 'test usage',
        })
        .execute();
    });
    const refunded = await admin.client.request('POST', `/admin/orders/${id}/refund`, {
      body: { note: 'customer asked' },
    });
    expect(refunded.status).toBe(200);
    expect(refunded.body.data).toMatchObject({
      status: 'refunded',
      refunded: { tokens: '700', credits: '0' },
    });
    const balance = await buyer.client.request('GET', '/me/balance');
    expect(balance.body.data.remaining.tokens).toBe('0');
    const again = await admin.client.request('POST', `/admin/orders/${id}/refund`);
    expect(again.status).toBe(422);
    await expectLedgerConsistent(context);
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
