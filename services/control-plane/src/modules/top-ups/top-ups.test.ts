/**
 * Top-ups of any amount and automatic top-up, in process: credit value and bounds, exactly-once
 * grants through the development provider and Stripe (webhook replays, double submits), the kept
 * card, and one charge per crossing of the threshold under concurrent settlements, on both engines.
 */
import { apiKeyDigest } from '@tollgate/schemas';
import { type StripeFake, startStripeFake } from '@tollgate/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type FundedKey, internalApi, reserveItem, settleItem } from '../../../test/billing.ts';
import {
  commerceEnv,
  deliverWebhook,
  expectLedgerConsistent,
  seedCommerceCatalog,
  shopper,
} from '../../../test/commerce.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { createKey } from '../api-keys/api-keys.service.ts';
import { changeCredit } from '../billing/billing.service.ts';
import { sendBillingNotices } from '../notifications/notifications.service.ts';
import { checkAutoTopUp } from './auto-top-up.service.ts';

let fake: StripeFake;
beforeAll(async () => {
  fake = await startStripeFake();
});
afterAll(async () => {
  await fake.close();
});

/** Credit ledger rows of an account written by orders (grants and take-backs). */
async function orderCreditRows(context: TestContext, accountId: string) {
  return context.deps.db
    .selectFrom('ledger_entries')
    .select(['kind', 'amount', 'cause'])
    .where('account_id', '=', accountId)
    .where('entitlement_id', 'is', null)
    .where('cause', 'like', '%order %')
    .orderBy('created_at')
    .execute();
}

/** Waits for the settlement watch's background checks; bounded (each round is one check). */
async function settledChecks(context: TestContext, accountId: string, rounds = 50) {
  for (let round = 0; round < rounds; round++) {
    // The watch runs after the finish answered; a short pause lets its queued checks finish.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const pending = await context.deps.db
      .selectFrom('orders')
      .select('id')
      .where('account_id', '=', accountId)
      .where('status', '=', 'pending')
      .execute();
    if (pending.length === 0 && round > 5) return;
  }
}

describe('top-ups', () => {
  let context: TestContext;
  beforeAll(async () => {
    context = await createTestContext('top-ups', commerceEnv(fake));
    await seedCommerceCatalog(context);
  });
  afterAll(async () => {
    await expectLedgerConsistent(context);
    await context.publicApp.mailer.drain();
    await context.close();
  });

  it('the public catalogue says what a credit is worth and the bounds of a top-up', async () => {
    const response = await context.publicApp.request('/api/v1/catalog/credit');
    expect(response.status).toBe(200);
    expect(((await response.json()) as { data: unknown }).data).toEqual({
      value: { currency: 'USD', exponent: 2, perCredit: '0.000001' },
      topUp: {
        min: { amount: '500', currency: 'USD', exponent: 2 },
        max: { amount: '50000', currency: 'USD', exponent: 2 },
      },
    });
  });

  it('a top-up of 12.34 USD grants 12,340,000 credits once, however often it is verified or sent', async () => {
    const buyer = await shopper(context);
    const headers = { 'idempotency-key': 'form-1' };
    const [first, second] = await Promise.all([
      buyer.client.request('POST', '/top-ups', {
        body: { amount: '1234', provider: 'development' },
        headers,
      }),
      buyer.client.request('POST', '/top-ups', {
        body: { amount: '1234', provider: 'development' },
        headers,
      }),
    ]);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body.data.id).toBe(first.body.data.id);
    expect(first.body.data).toMatchObject({
      kind: 'top_up',
      packageId: null,
      price: { amount: '1234', currency: 'USD', exponent: 2 },
      grants: { tokens: '0', credits: '12340000' },
      automatic: false,
    });
    const other = await buyer.client.request('POST', '/top-ups', {
      body: { amount: '999', provider: 'development' },
      headers,
    });
    expect(other.status).toBe(422);

    const id = first.body.data.id;
    await buyer.client.request('POST', `/orders/${id}/payment`);
    const verifies = await Promise.all(
      Array.from({ length: 20 }, () => buyer.client.request('POST', `/orders/${id}/payment/verify`)),
    );
    expect(verifies.map((answer) => answer.status)).toEqual(Array(20).fill(200));
    const balance = await buyer.client.request('GET', '/me/balance');
    expect(balance.body.data.remaining.credits).toBe('12340000');
    expect(await orderCreditRows(context, buyer.accountId)).toEqual([
      { kind: 'grant', amount: 12340000n, cause: `order ${id}` },
    ]);
  });

  it('refuses an amount outside the bounds, naming them', async () => {
    const buyer = await shopper(context);
    for (const amount of ['499', '50001', '0']) {
      const refused = await buyer.client.request('POST', '/top-ups', { body: { amount } });
      expect(refused.status).toBe(422);
      expect(JSON.stringify(refused.body.errors)).toContain('Top up between 5.00 and 500.00 USD.');
    }
    expect((await buyer.client.request('GET', '/orders')).body.data.items).toHaveLength(0);
  });

  it('through Stripe: webhook replays grant once, the card is kept, and an admin refund takes the credit back', async () => {
    const buyer = await shopper(context);
    const created = await buyer.client.request('POST', '/top-ups', {
      body: { amount: '2000', provider: 'stripe', savePaymentMethod: true },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    await buyer.client.request('POST', `/orders/${id}/payment`);
    const session = [...fake.sessions.values()].find((candidate) => candidate.client_reference_id === id)!;
    expect(session).toMatchObject({ amount_total: 2000, currency: 'usd', setup_future_usage: 'off_session' });
    const event = fake.eventFor('checkout.session.completed', fake.pay(session.id));
    const answers = await Promise.all(Array.from({ length: 3 }, () => deliverWebhook(context, event)));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect((await buyer.client.request('GET', '/me/balance')).body.data.remaining.credits).toBe('20000000');
    expect(await orderCreditRows(context, buyer.accountId)).toHaveLength(1);
    const settings = await buyer.client.request('GET', '/me/auto-top-up');
    expect(settings.body.data).toMatchObject({ cardSaved: true, enabled: false });

    const admin = await shopper(context, { admin: true });
    const refunded = await admin.client.request('POST', `/admin/orders/${id}/refund`, {
      body: { note: 'asked by the customer' },
    });
    expect(refunded.status).toBe(200);
    expect(refunded.body.data.refunded).toEqual({ tokens: '0', credits: '20000000' });
    expect((await buyer.client.request('GET', '/me/balance')).body.data.remaining.credits).toBe('0');
  });

  it('a customer without a kept card cannot turn automatic top-up on', async () => {
    const buyer = await shopper(context);
    const refused = await buyer.client.request('PUT', '/me/auto-top-up', {
      body: { enabled: true, threshold: '1000000', amount: '1000' },
    });
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.body.errors)).toContain('Keep a card first');
  });
});

/** Emails of a kind to an address, oldest first. */
async function emailsTo(context: TestContext, email: string, kind: string) {
  return context.deps.db
    .selectFrom('outbox_emails')
    .select(['subject', 'body_text'])
    .where('recipient', '=', email)
    .where('kind', '=', kind)
    .orderBy('created_at')
    .execute();
}

/** Two control planes' email passes at once, then another: a notice must still go out once. */
async function emailPasses(context: TestContext): Promise<void> {
  const mailer = context.publicApp.mailer;
  await Promise.all([sendBillingNotices(context.deps, mailer), sendBillingNotices(context.deps, mailer)]);
  await sendBillingNotices(context.deps, mailer);
}

/** A customer with a kept card (a paid Stripe top-up of 5.00 USD) and a key on the same account. */
async function customerWithCard(context: TestContext) {
  const buyer = await shopper(context);
  const created = await buyer.client.request('POST', '/top-ups', {
    body: { amount: '500', provider: 'stripe', savePaymentMethod: true },
  });
  const id = created.body.data.id;
  await buyer.client.request('POST', `/orders/${id}/payment`);
  const session = [...fake.sessions.values()].find((candidate) => candidate.client_reference_id === id)!;
  fake.pay(session.id);
  expect((await buyer.client.request('POST', `/orders/${id}/payment/verify`)).status).toBe(200);
  const { key, secret } = await createKey(context.deps, buyer.accountId, { name: 'auto', scope: null });
  const funded: FundedKey = {
    accountId: buyer.accountId,
    email: buyer.email,
    keyId: key.id,
    secret,
    digest: apiKeyDigest(secret),
  };
  return { buyer, key: funded };
}

describe.each(ENGINES)('automatic top-up (%s)', (_name, hotTier) => {
  let context: TestContext;
  beforeAll(async () => {
    context = await createTestContext(`auto-top-up-${hotTier ? 'hot' : 'pg'}`, commerceEnv(fake), {
      hotTier,
    });
    await seedCommerceCatalog(context);
  });
  afterAll(async () => {
    await expectLedgerConsistent(context);
    await context.publicApp.mailer.drain();
    await context.close();
  });

  it('50 concurrent settlements crossing the threshold charge the card once and grant once', async () => {
    const { buyer, key } = await customerWithCard(context);
    // 5,000,000 credits held; each call costs 100 × 2 + 100 × 5 = 700 credits, so the 50 calls
    // (35,000) cross a threshold of 4,990,000 together.
    const enabled = await buyer.client.request('PUT', '/me/auto-top-up', {
      body: { enabled: true, threshold: '4990000', amount: '1000' },
    });
    expect(enabled.status).toBe(200);
    expect(enabled.body.data).toMatchObject({ enabled: true, armed: true, cardSaved: true });
    const chargesBefore = fake.charges.length;

    const api = internalApi(context);
    const items = Array.from({ length: 50 }, () => reserveItem(key, 'priced', 100n, 100n));
    const reserved = await Promise.all(items.map((item) => api.reserve([item])));
    expect(reserved.map((answer) => answer.body.results[0]!.ok)).toEqual(Array(50).fill(true));
    const settled = await Promise.all(
      items.map((item) => api.finish([settleItem(key, item.reservationId, 'priced', 100n, 100n)])),
    );
    expect(settled.every((answer) => answer.status === 200)).toBe(true);
    // Every settlement's check again, all at once, as 50 control planes would.
    await Promise.all(Array.from({ length: 50 }, () => checkAutoTopUp(context.deps, buyer.accountId)));
    await settledChecks(context, buyer.accountId);

    const charges = fake.charges.slice(chargesBefore);
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({
      amount: 1000,
      currency: 'usd',
      off_session: true,
      status: 'succeeded',
    });
    const grants = (await orderCreditRows(context, buyer.accountId)).filter((row) => row.kind === 'grant');
    // The card-keeping top-up, then exactly one automatic one.
    expect(grants.map((row) => row.amount)).toEqual([5000000n, 10000000n]);
    const orders = await buyer.client.request('GET', '/orders');
    const automatic = orders.body.data.items.filter((order: { automatic: boolean }) => order.automatic);
    expect(automatic).toHaveLength(1);
    expect(automatic[0]).toMatchObject({ status: 'paid', grants: { credits: '10000000' } });

    // The PaymentIntent's webhook, delivered three times, changes nothing more.
    const intent = fake.paymentIntents.get(charges[0]!.id)!;
    const event = fake.paymentIntentEventFor('payment_intent.succeeded', intent);
    const answers = await Promise.all(Array.from({ length: 3 }, () => deliverWebhook(context, event)));
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(['already_paid', 'duplicate']).toContain(answer.body.data.outcome);
    }
    expect(
      (await orderCreditRows(context, buyer.accountId)).filter((row) => row.kind === 'grant'),
    ).toHaveLength(2);
    // Back above the threshold: the next settlement arms it again (a new crossing may charge again).
    await checkAutoTopUp(context.deps, buyer.accountId);
    expect((await buyer.client.request('GET', '/me/auto-top-up')).body.data.armed).toBe(true);

    // One email for the automatic top-up, however many passes: what it charged and granted, how to
    // turn it off; it stands for the order's receipt (the card-keeping top-up keeps its own).
    await emailPasses(context);
    const mails = await emailsTo(context, buyer.email, 'auto_top_up');
    expect(mails).toHaveLength(1);
    expect(mails[0]!.subject).toBe('Automatic top-up: USD 10.00 charged');
    expect(mails[0]!.body_text).toContain('charged USD 10.00 and 10,000,000 credits were added');
    expect(mails[0]!.body_text).toContain(`To turn automatic top-up off`);
    expect(mails[0]!.body_text).toContain(`http://127.0.0.1:${context.deps.config.port}/buy`);
    expect(mails[0]!.body_text).toContain(`/orders/${automatic[0].id}`);
    expect(await emailsTo(context, buyer.email, 'purchase')).toHaveLength(1);
  });

  it('a declined card grants nothing, says why, and waits for the balance to rise', async () => {
    const { buyer } = await customerWithCard(context);
    await buyer.client.request('PUT', '/me/auto-top-up', {
      body: { enabled: true, threshold: '6000000', amount: '1000' },
    });
    fake.declineCharges = true;
    try {
      expect(await checkAutoTopUp(context.deps, buyer.accountId)).toBe('failed');
    } finally {
      fake.declineCharges = false;
    }
    expect(await checkAutoTopUp(context.deps, buyer.accountId)).toBe('waiting');
    const settings = (await buyer.client.request('GET', '/me/auto-top-up')).body.data;
    expect(settings).toMatchObject({ armed: false, lastFailure: 'The saved card was declined.' });
    const failed = (await buyer.client.request('GET', '/orders')).body.data.items.filter(
      (order: { automatic: boolean }) => order.automatic,
    );
    expect(failed).toHaveLength(1);
    expect(failed[0].status).toBe('failed');
    expect((await buyer.client.request('GET', '/me/balance')).body.data.remaining.credits).toBe('5000000');
    // A grant lifts the balance above the threshold: armed again.
    await changeCredit(context.deps, {
      accountId: buyer.accountId,
      amount: 2000000n,
      kind: 'grant',
      cause: 'test',
    });
    expect(await checkAutoTopUp(context.deps, buyer.accountId)).toBe('rearmed');
    // The declined top-up was never paid: no email says it happened.
    await emailPasses(context);
    expect(await emailsTo(context, buyer.email, 'auto_top_up')).toHaveLength(0);
  });

  it('a customer who turned purchase emails off is not told of an automatic top-up', async () => {
    const { buyer } = await customerWithCard(context);
    await emailPasses(context);
    const off = await buyer.client.request('PATCH', '/me/email-settings', {
      body: { purchaseEmails: false },
    });
    expect(off.status).toBe(200);
    await buyer.client.request('PUT', '/me/auto-top-up', {
      body: { enabled: true, threshold: '6000000', amount: '1000' },
    });
    expect(await checkAutoTopUp(context.deps, buyer.accountId)).toBe('charged');
    await emailPasses(context);
    expect(await emailsTo(context, buyer.email, 'auto_top_up')).toHaveLength(0);
  });
});
