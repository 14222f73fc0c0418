import { type StripeFake, startStripeFake } from '@tollgate/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditRefusal } from '../../../test/audit-refusal.ts';
import {
  commerceEnv,
  createPromotionAs,
  deliverWebhook,
  expectLedgerConsistent,
  grantsOf,
  type Shopper,
  seedCommerceCatalog,
  shopper,
} from '../../../test/commerce.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { reconcilePaymentsOnce } from './payment-reconciler.ts';

let context: TestContext;
let fake: StripeFake;
let admin: Shopper;

beforeAll(async () => {
  fake = await startStripeFake();
  context = await createTestContext('commerce-stripe', commerceEnv(fake));
  await seedCommerceCatalog(context);
  admin = await shopper(context, { admin: true });
});
afterAll(async () => {
  await expectLedgerConsistent(context);
  await context.publicApp.mailer.drain();
  await context.close();
  await fake.close();
});

/** A customer with a Stripe order whose Checkout Session is open at the fake. */
async function openCheckout(packageId = 'usd') {
  const buyer = await shopper(context);
  const created = await buyer.client.request('POST', '/orders', { body: { packageId } });
  expect(created.status).toBe(201);
  expect(created.body.data.provider).toBe('stripe');
  const id: string = created.body.data.id;
  const started = await buyer.client.request('POST', `/orders/${id}/payment`);
  expect(started.status).toBe(200);
  const payment = started.body.data.payment;
  expect(payment).toMatchObject({ provider: 'stripe', nextStep: 'redirect', status: 'pending' });
  const session = [...fake.sessions.values()].find((candidate) => candidate.client_reference_id === id)!;
  expect(payment.redirectUrl).toBe(session.url);
  expect(session).toMatchObject({ amount_total: 1999, currency: 'usd' });
  return { buyer, id, session };
}

const logged = (text: string) => context.logLines.some((line) => line.includes(text));

describe('Stripe Checkout', () => {
  it('50 concurrent verifies and the webhook delivered 3 times grant exactly once', async () => {
    const { buyer, id, session } = await openCheckout();
    // A repeated start opens no second session.
    await buyer.client.request('POST', `/orders/${id}/payment`);
    expect(
      [...fake.sessions.values()].filter((candidate) => candidate.client_reference_id === id),
    ).toHaveLength(1);

    const pending = await buyer.client.request('POST', `/orders/${id}/payment/verify`);
    expect(pending.status).toBe(402);
    expect(pending.body.code).toBe('payment_pending');
    expect(pending.headers.get('retry-after')).toBeTruthy();

    const paid = fake.pay(session.id);
    const event = fake.eventFor('checkout.session.completed', paid);
    const [verifies, webhooks] = await Promise.all([
      Promise.all(
        Array.from({ length: 50 }, () => buyer.client.request('POST', `/orders/${id}/payment/verify`)),
      ),
      Promise.all(Array.from({ length: 3 }, () => deliverWebhook(context, event))),
    ]);
    expect(verifies.map((answer) => answer.status)).toEqual(Array(50).fill(200));
    expect(webhooks.map((answer) => answer.status)).toEqual([200, 200, 200]);
    const { entitlements, grants } = await grantsOf(context, buyer.accountId);
    expect(entitlements).toHaveLength(1);
    expect(grants).toHaveLength(1);
    expect(grants[0]!.available_delta).toBe(1000n);
    const balance = await buyer.client.request('GET', '/me/balance');
    expect(balance.body.data.remaining.tokens).toBe('1000');
    await expectLedgerConsistent(context);

    // The same event again later: recognised and ignored.
    const replay = await deliverWebhook(context, event);
    expect(replay.body.data.outcome).toBe('duplicate');
    expect((await grantsOf(context, buyer.accountId)).grants).toHaveLength(1);
  });

  it('the webhook outcome says what changed: an expired event of a paid order is unchanged', async () => {
    const { buyer, id, session } = await openCheckout();
    const paid = fake.pay(session.id);
    expect((await buyer.client.request('POST', `/orders/${id}/payment/verify`)).status).toBe(200);
    const completed = await deliverWebhook(context, fake.eventFor('checkout.session.completed', paid));
    expect(completed.body.data.outcome).toBe('already_paid');
    const expired = await deliverWebhook(context, fake.eventFor('checkout.session.expired', paid));
    expect(expired.body.data.outcome).toBe('unchanged');
    expect((await buyer.client.request('GET', `/orders/${id}`)).body.data.status).toBe('paid');
    const recorded = await context.deps.db
      .selectFrom('payment_events')
      .select('outcome')
      .where('order_id', '=', id)
      .orderBy('created_at')
      .execute();
    expect(recorded.map((row) => row.outcome).sort()).toEqual(['already_paid', 'unchanged']);
  });

  it('a webhook with a bad signature or an old timestamp credits nothing and is logged', async () => {
    const { buyer, id, session } = await openCheckout();
    const event = fake.eventFor('checkout.session.completed', fake.pay(session.id));

    const forged = await deliverWebhook(context, event, { secret: 'whsec_not_ours' });
    expect(forged.status).toBe(422);
    expect(forged.body.code).toBe('validation_failed');
    const old = await deliverWebhook(context, event, { timestamp: Math.floor(Date.now() / 1000) - 3600 });
    expect(old.status).toBe(422);
    const unsigned = await context.publicApp.request('/api/v1/payments/stripe/webhook', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(event),
    });
    expect(unsigned.status).toBe(422);

    expect((await grantsOf(context, buyer.accountId)).grants).toHaveLength(0);
    expect((await buyer.client.request('GET', `/orders/${id}`)).body.data.status).toBe('pending');
    expect(logged('payment webhook refused')).toBe(true);
  });

  it('an amount or currency that differs from the order credits nothing, is logged and fails verify', async () => {
    for (const override of [{ amount: 1 }, { currency: 'eur' }]) {
      const { buyer, id, session } = await openCheckout();
      const event = fake.eventFor('checkout.session.completed', fake.pay(session.id, override));
      const delivered = await deliverWebhook(context, event);
      expect(delivered.status).toBe(200);
      expect(delivered.body.data.outcome).toBe('mismatch');
      const verify = await buyer.client.request('POST', `/orders/${id}/payment/verify`);
      expect(verify.status).toBe(402);
      expect(verify.body.code).toBe('payment_verification_failed');
      expect((await grantsOf(context, buyer.accountId)).grants).toHaveLength(0);
      expect((await buyer.client.request('GET', `/orders/${id}`)).body.data.status).not.toBe('paid');
    }
    expect(logged('differs from the order')).toBe(true);
  });

  it('an expired session fails the order and verify says so', async () => {
    const { buyer, id, session } = await openCheckout();
    fake.expire(session.id);
    const verify = await buyer.client.request('POST', `/orders/${id}/payment/verify`);
    expect(verify.status).toBe(402);
    expect(verify.body.code).toBe('payment_verification_failed');
    expect((await buyer.client.request('GET', `/orders/${id}`)).body.data.status).toBe('failed');
  });

  it('the reconciler finds a payment whose webhook was lost', async () => {
    const { buyer, id, session } = await openCheckout();
    fake.pay(session.id);
    context.clock.advance(2_000);
    const pass = await reconcilePaymentsOnce(context.deps);
    expect(pass.paid).toBeGreaterThanOrEqual(1);
    expect((await buyer.client.request('GET', `/orders/${id}`)).body.data.status).toBe('paid');
    expect((await grantsOf(context, buyer.accountId)).grants).toHaveLength(1);
  });

  it('an overdue order paid at the last moment is paid, not expired; an expired session event fails an order', async () => {
    const late = await openCheckout();
    fake.pay(late.session.id);
    const unpaid = await openCheckout();
    context.clock.advance(6 * 60_000);
    await reconcilePaymentsOnce(context.deps);
    expect((await late.buyer.client.request('GET', `/orders/${late.id}`)).body.data.status).toBe('paid');
    expect((await unpaid.buyer.client.request('GET', `/orders/${unpaid.id}`)).body.data.status).toBe(
      'expired',
    );

    const dropped = await openCheckout();
    const event = fake.eventFor('checkout.session.expired', fake.expire(dropped.session.id));
    expect((await deliverWebhook(context, event)).body.data.outcome).toBe('failed');
    expect((await dropped.buyer.client.request('GET', `/orders/${dropped.id}`)).body.data.status).toBe(
      'failed',
    );
    expect((await grantsOf(context, dropped.buyer.accountId)).grants).toHaveLength(0);
  });

  it('an admin refund goes through Stripe and takes back the unused grant', async () => {
    const { buyer, id, session } = await openCheckout();
    fake.pay(session.id);
    expect((await buyer.client.request('POST', `/orders/${id}/payment/verify`)).status).toBe(200);
    const refunded = await admin.client.request('POST', `/admin/orders/${id}/refund`, {
      body: { note: 'customer asked' },
    });
    expect(refunded.status).toBe(200);
    expect(refunded.body.data).toMatchObject({ status: 'refunded', refunded: { tokens: '1000' } });
    expect(
      fake.refunds.filter(
        (refund) => refund.payment_intent === fake.sessions.get(session.id)!.payment_intent,
      ),
    ).toHaveLength(1);
    expect((await buyer.client.request('GET', '/me/balance')).body.data.remaining.tokens).toBe('0');
    // Stripe then tells of the refund it made: already refunded here, nothing more.
    const paid = fake.sessions.get(session.id)!;
    const echo = await deliverWebhook(context, fake.chargeEventFor('charge.refunded', paid));
    expect(echo.body.data.outcome).toBe('unchanged');
    const reported = await admin.client.request(
      'GET',
      `/admin/audit?action=order.refunded_at_provider&targetId=${id}`,
    );
    expect(reported.status).toBe(200);
    expect(reported.body.data.items).toEqual([]);
    await expectLedgerConsistent(context);
  });
});

describe('Stripe Checkout and promotion limits', () => {
  /** An order of `buyer` with `code` whose Checkout Session is open at the fake. */
  async function checkoutWithCode(buyer: Shopper, code: string) {
    const created = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'usd', promotionCode: code },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id: string = created.body.data.id;
    expect((await buyer.client.request('POST', `/orders/${id}/payment`)).status).toBe(200);
    const session = [...fake.sessions.values()].find((candidate) => candidate.client_reference_id === id)!;
    return { id, session };
  }
  const taken = async (promotionId: string) =>
    (await admin.client.request('GET', '/admin/promotions?limit=200')).body.data.items.find(
      (item: { id: string }) => item.id === promotionId,
    ).redemptionsTaken;

  it('cancel expires the session at Stripe before the hold returns; a late payment past the limit is refunded', async () => {
    const promotion = await createPromotionAs(admin, {
      code: `ONCEEACH${Date.now()}`,
      kind: 'percent_off',
      percentOff: 50,
      perAccountLimit: 1,
    });
    const buyer = await shopper(context);
    const cancelled = [];
    for (let i = 0; i < 3; i += 1) {
      const order = await checkoutWithCode(buyer, promotion.code);
      const answer = await buyer.client.request('POST', `/orders/${order.id}/cancel`);
      expect(answer.body.data.status).toBe('cancelled');
      // The session can no longer be paid at Stripe.
      expect(fake.sessions.get(order.session.id)!.status).toBe('expired');
      cancelled.push(order);
    }
    const kept = await checkoutWithCode(buyer, promotion.code);
    fake.pay(kept.session.id);
    expect((await buyer.client.request('POST', `/orders/${kept.id}/payment/verify`)).status).toBe(200);
    expect(await taken(promotion.id)).toBe(1);

    // A payment Stripe completed anyway (it raced the expiry) arrives late: the code's limit
    // of one per account is used, so it is refunded and grants nothing.
    const late = cancelled[0]!;
    const paid = fake.pay(late.session.id);
    const delivered = await deliverWebhook(context, fake.eventFor('checkout.session.completed', paid));
    expect(delivered.body.data.outcome).toBe('refunded');
    expect(fake.refunds.filter((refund) => refund.payment_intent === paid.payment_intent)).toHaveLength(1);
    // Stripe then tells of that refund: it is our own, nothing to take back or report.
    const echo = await deliverWebhook(context, fake.chargeEventFor('charge.refunded', paid));
    expect(echo.body.data.outcome).toBe('unchanged');
    const verify = await buyer.client.request('POST', `/orders/${late.id}/payment/verify`);
    expect(verify.status).toBe(402);
    expect(verify.body.code).toBe('payment_verification_failed');
    expect(verify.body.message).toMatch(/refunded/);
    const order = (await buyer.client.request('GET', `/orders/${late.id}`)).body.data;
    expect(order).toMatchObject({ status: 'cancelled', payment: { status: 'refunded' } });
    expect((await grantsOf(context, buyer.accountId)).grants).toHaveLength(1);
    expect(await taken(promotion.id)).toBe(1);
    // Delivered again under another event id: refunded once.
    await deliverWebhook(context, fake.eventFor('checkout.session.completed', paid));
    expect(fake.refunds.filter((refund) => refund.payment_intent === paid.payment_intent)).toHaveLength(1);
    await expectLedgerConsistent(context);
  });

  it('a late payment of a cancelled order is honoured while its code still has room', async () => {
    const promotion = await createPromotionAs(admin, {
      code: `ROOM${Date.now()}`,
      kind: 'percent_off',
      percentOff: 10,
      totalLimit: 5,
    });
    const buyer = await shopper(context);
    const order = await checkoutWithCode(buyer, promotion.code);
    await buyer.client.request('POST', `/orders/${order.id}/cancel`);
    expect(await taken(promotion.id)).toBe(0);
    fake.pay(order.session.id);
    expect((await buyer.client.request('POST', `/orders/${order.id}/payment/verify`)).status).toBe(200);
    expect(await taken(promotion.id)).toBe(1);
  });

  it('a session paid before the cancel pays the order; Stripe unreachable keeps the order and its hold', async () => {
    const promotion = await createPromotionAs(admin, {
      code: `RACE${Date.now()}`,
      kind: 'percent_off',
      percentOff: 10,
      totalLimit: 1,
    });
    const buyer = await shopper(context);
    const first = await checkoutWithCode(buyer, promotion.code);
    fake.failExpire = true;
    try {
      const refused = await buyer.client.request('POST', `/orders/${first.id}/cancel`);
      expect(refused.status).toBe(503);
      expect(refused.body.code).toBe('server_error');
      context.clock.advance(6 * 60_000);
      await reconcilePaymentsOnce(context.deps);
      expect((await buyer.client.request('GET', `/orders/${first.id}`)).body.data.status).toBe('pending');
      expect(await taken(promotion.id)).toBe(1);
    } finally {
      fake.failExpire = false;
    }
    await reconcilePaymentsOnce(context.deps);
    expect((await buyer.client.request('GET', `/orders/${first.id}`)).body.data.status).toBe('expired');
    expect(fake.sessions.get(first.session.id)!.status).toBe('expired');
    expect(await taken(promotion.id)).toBe(0);

    const second = await checkoutWithCode(buyer, promotion.code);
    fake.pay(second.session.id);
    const cancel = await buyer.client.request('POST', `/orders/${second.id}/cancel`);
    expect(cancel.status).toBe(422);
    expect(cancel.body.errors.status[0]).toMatch(/paid/);
    expect((await buyer.client.request('GET', `/orders/${second.id}`)).body.data.status).toBe('paid');
    expect((await grantsOf(context, buyer.accountId)).grants).toHaveLength(1);
  });
});

describe('refunds and disputes made at Stripe', () => {
  /** A customer with a paid Stripe order, 300 of its 1,000 tokens used. */
  async function paidOrder() {
    const { buyer, id, session } = await openCheckout();
    const paid = fake.pay(session.id);
    expect((await buyer.client.request('POST', `/orders/${id}/payment/verify`)).status).toBe(200);
    await useTokens(buyer.accountId, id, 300n);
    return { buyer, id, paid };
  }
  async function useTokens(accountId: string, orderId: string, tokens: bigint) {
    await context.deps.db.transaction().execute(async (trx) => {
      const { entitlement_id } = await trx
        .selectFrom('orders')
        .select('entitlement_id')
        .where('id', '=', orderId)
        .executeTakeFirstOrThrow();
      await trx
        .updateTable('entitlements')
        .set((eb) => ({ remaining: eb('remaining', '-', tokens) }))
        .where('id', '=', entitlement_id!)
        .execute();
      await trx
        .insertInto('ledger_entries')
        .values({
          account_id: accountId,
          entitlement_id,
          kind: 'settle',
          available_delta: -tokens,
          amount: tokens,
          cause: 'test usage',
        })
        .execute();
    });
  }
  const adjustments = (accountId: string) =>
    context.deps.db
      .selectFrom('ledger_entries')
      .select(['available_delta', 'cause'])
      .where('account_id', '=', accountId)
      .where('kind', '=', 'adjustment')
      .execute();
  const reported = async (orderId: string) =>
    (await admin.client.request('GET', `/admin/audit?targetId=${orderId}`)).body.data.items.map(
      (item: { action: string; actor: { accountId: string | null } }) => [item.action, item.actor.accountId],
    );

  it('a refund made in Stripe takes back the unused rest through the ledger and is reported', async () => {
    const { buyer, id, paid } = await paidOrder();
    const event = fake.chargeEventFor('charge.refunded', paid);
    const delivered = await deliverWebhook(context, event);
    expect(delivered.body.data.outcome).toBe('refunded');
    const order = (await buyer.client.request('GET', `/orders/${id}`)).body.data;
    expect(order).toMatchObject({
      status: 'refunded',
      refunded: { tokens: '700' },
      payment: { status: 'refunded' },
    });
    expect((await buyer.client.request('GET', '/me/balance')).body.data.remaining.tokens).toBe('0');
    expect((await adjustments(buyer.accountId)).map((row) => row.available_delta)).toEqual([-700n]);
    expect(await reported(id)).toEqual([['order.refunded_at_provider', null]]);
    // The same refund again (Stripe resends under another id): nothing more.
    await deliverWebhook(context, fake.chargeEventFor('charge.refunded', paid));
    expect(await adjustments(buyer.accountId)).toHaveLength(1);
    await expectLedgerConsistent(context);
  });

  it('a partial refund in Stripe is reported and takes nothing back', async () => {
    const { buyer, id, paid } = await paidOrder();
    const delivered = await deliverWebhook(
      context,
      fake.chargeEventFor('charge.refunded', paid, { amountRefunded: 500 }),
    );
    expect(delivered.body.data.outcome).toBe('reported');
    expect((await buyer.client.request('GET', `/orders/${id}`)).body.data.status).toBe('paid');
    expect((await buyer.client.request('GET', '/me/balance')).body.data.remaining.tokens).toBe('700');
    expect(await reported(id)).toEqual([['order.partially_refunded_at_provider', null]]);
  });

  it('a dispute holds the account, takes back the unused rest and is reported to admins', async () => {
    const { buyer, id, paid } = await paidOrder();
    const delivered = await deliverWebhook(context, fake.chargeEventFor('charge.dispute.created', paid));
    expect(delivered.status).toBe(200);
    expect(delivered.body.data.outcome).toBe('disputed');
    const held = await buyer.client.request('GET', '/me/balance');
    expect(held.status).toBe(403);
    expect(held.body.code).toBe('account_suspended');
    const order = (await admin.client.request('GET', `/admin/orders/${id}`)).body.data;
    expect(order).toMatchObject({
      status: 'refunded',
      refunded: { tokens: '700' },
      payment: { status: 'refunded', failureReason: 'disputed' },
    });
    expect((await adjustments(buyer.accountId)).map((row) => row.available_delta)).toEqual([-700n]);
    const account = await admin.client.request('GET', `/admin/accounts/${buyer.accountId}`);
    expect(account.body.data.status).toBe('suspended');
    expect(await reported(id)).toEqual([['order.dispute_opened', null]]);
    expect(await reported(buyer.accountId)).toEqual([['account.suspended_for_dispute', null]]);
    // Delivered twice: taken back once.
    await deliverWebhook(context, fake.chargeEventFor('charge.dispute.created', paid));
    expect(await adjustments(buyer.accountId)).toHaveLength(1);
    // Closed: reported; the account stays held until an admin reinstates it.
    const closed = await deliverWebhook(context, fake.chargeEventFor('charge.dispute.closed', paid));
    expect(closed.body.data.outcome).toBe('reported');
    expect((await admin.client.request('GET', `/admin/accounts/${buyer.accountId}`)).body.data.status).toBe(
      'suspended',
    );
    await expectLedgerConsistent(context);
  });

  it('suspends for a dispute only with its audit row: a refused row leaves the account and order as they were', async () => {
    const { buyer, id, paid } = await paidOrder();
    const audit = await auditRefusal(context);
    await audit.refuse(buyer.accountId);
    try {
      const delivered = await deliverWebhook(context, fake.chargeEventFor('charge.dispute.created', paid));
      expect(delivered.status).toBe(500);
      expect((await admin.client.request('GET', `/admin/accounts/${buyer.accountId}`)).body.data.status).toBe(
        'active',
      );
      expect((await admin.client.request('GET', `/admin/orders/${id}`)).body.data.status).toBe('paid');
    } finally {
      await audit.allow(buyer.accountId);
    }
    // Stripe delivers it again: now it suspends, with its row.
    const again = await deliverWebhook(context, fake.chargeEventFor('charge.dispute.created', paid));
    expect(again.body.data.outcome).toBe('disputed');
    expect(await reported(buyer.accountId)).toEqual([['account.suspended_for_dispute', null]]);
  });
});
