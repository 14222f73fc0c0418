import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commerceEnv,
  createPromotionAs,
  expectLedgerConsistent,
  type Shopper,
  seedCommerceCatalog,
  shopper,
} from '../../../test/commerce.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { reconcilePaymentsOnce } from '../payments/payment-reconciler.ts';

let context: TestContext;
let admin: Shopper;

beforeAll(async () => {
  context = await createTestContext('commerce-promotions', commerceEnv());
  await seedCommerceCatalog(context);
  admin = await shopper(context, { admin: true });
});
afterAll(async () => {
  await expectLedgerConsistent(context);
  await context.publicApp.mailer.drain();
  await context.close();
});

const promotion = (body: Record<string, unknown>) => createPromotionAs(admin, body);

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
    // The currency of a code is that of its amount off or of its minimum price; the reason says which.
    const amountOff = `USDOFF${Date.now()}`;
    await promotion({
      code: amountOff,
      kind: 'amount_off',
      amountOff: { amount: '100', currency: 'USD', exponent: 2 },
    });
    const minimum = `MINUSD${Date.now()}`;
    await promotion({
      code: minimum,
      kind: 'percent_off',
      percentOff: 10,
      minAmount: { amount: '100', currency: 'USD', exponent: 2 },
    });
    const reason = async (candidate: string) =>
      (
        await buyer.client.request('POST', '/promotions/preview', {
          body: { code: candidate, packageId: 'jpy' },
        })
      ).body.errors.code[0];
    expect(await reason(amountOff)).toMatch(/amount in USD off.*priced in USD/);
    expect(await reason(minimum)).toMatch(/minimum price in USD.*priced in USD/);
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

  it('only admins manage promotions; each change is audited and a deactivated code stops applying', async () => {
    const buyer = await shopper(context);
    const forbidden = await buyer.client.request('POST', '/admin/promotions', {
      body: { code: 'MINE', kind: 'percent_off', percentOff: 100 },
    });
    expect(forbidden.status).toBe(403);
    const missing = await admin.client.request('POST', '/admin/promotions', {
      body: { code: 'X1', kind: 'amount_off' },
    });
    expect(missing.status).toBe(422);
    expect(missing.body.errors.amountOff).toBeDefined();

    const code = `STOP${Date.now()}`;
    const created = await promotion({ code, kind: 'bonus_credit', bonus: '5' });
    const changed = await admin.client.request('PATCH', `/admin/promotions/${created.id}`, {
      body: { active: false },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.data.active).toBe(false);
    const preview = await buyer.client.request('POST', '/promotions/preview', {
      body: { code, packageId: 'usd' },
    });
    expect(preview.status).toBe(422);
    expect(preview.body.errors.code[0]).toMatch(/no longer active/);

    // Each change under its own action on the promotion, never as a key reveal.
    const audit = await admin.client.request('GET', `/admin/audit?actorAccountId=${admin.accountId}`);
    const actions = audit.body.data.items.map((item: { action: string; target: { type: string } }) => [
      item.action,
      item.target.type,
    ]);
    expect(actions).toEqual(
      expect.arrayContaining([
        ['promotion.create', 'promotion'],
        ['promotion.update', 'promotion'],
      ]),
    );
    expect(actions.map(([action]: string[]) => action)).not.toContain('api_key.reveal');
  });
});
