/**
 * Buying with the running services: a new customer signs up, previews and orders the package
 * with a promotion code, pays through the development provider (and, in the second test, through
 * Stripe Checkout at a local fake of the Stripe API, confirmed by a signed webhook), then calls a
 * model with the official client on what the order granted.
 */
import { type StripeFake, startStripeFake } from '@tollgate/test-harness';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openaiClient } from '../src/clients.ts';
import { type Customer, signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, Meter } from '../src/ledger.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

const WEBHOOK_SECRET = 'whsec_e2e_commerce_5b2f0c8d1e';

let stack: E2EStack;
let fake: StripeFake;
let admin: Customer;

beforeAll(async () => {
  fake = await startStripeFake();
  stack = await startStack('commerce', {
    controlPlaneEnv: {
      PAYMENT_PROVIDERS: 'development,stripe',
      STRIPE_SECRET_KEY: fake.secretKey,
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_API_URL: fake.url,
    },
  });
  admin = await signUpCustomer(stack);
  await stack.admin('set-role', admin.email, 'admin');
}, 120_000);

afterAll(async () => {
  await closeCheckingLedger(stack);
  await fake?.close();
});

async function createPromotion(body: Record<string, unknown>): Promise<void> {
  const answer = await admin.dashboard.request('POST', '/admin/promotions', body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
}

/** One metered call on the package-only alias, then the tokens left on the account. */
async function callModelAndReadTokens(customer: Customer): Promise<string> {
  const meter = new Meter(stack, customer.accountId);
  await meter.mark();
  const { secret } = await customer.createKey({ name: 'bought' });
  const completion = await openaiClient(stack.gatewayUrl, secret).chat.completions.create({
    model: 'gpt-tokens-e2e',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Hello @mock(input_tokens=100,output_tokens=20)' }],
  });
  expect(completion.usage).toMatchObject({ prompt_tokens: 100, completion_tokens: 20 });
  const [row] = await meter.finished(1);
  expect(row).toMatchObject({ status: 'settled' });
  const balance = await customer.dashboard.request('GET', '/me/balance');
  return balance.body.data.remaining.tokens;
}

describe('buying the example package', () => {
  it('through the development provider with a promotion code, then calling a model with it', async () => {
    const code = `WELCOME${Date.now()}`;
    await createPromotion({ code, kind: 'percent_off', percentOff: 10, packageIds: ['e2e-tokens'] });
    const customer = await signUpCustomer(stack);

    const preview = await customer.dashboard.request('POST', '/promotions/preview', {
      code,
      packageId: 'e2e-tokens',
    });
    expect(preview.status).toBe(200);
    expect(preview.body.data.priceAfter).toEqual({ amount: '810', currency: 'USD', exponent: 2 });

    const order = await customer.dashboard.request('POST', '/orders', {
      packageId: 'e2e-tokens',
      promotionCode: code,
      provider: 'development',
    });
    expect(order.status).toBe(201);
    expect(order.body.data.price).toEqual({ amount: '810', currency: 'USD', exponent: 2 });
    const id = order.body.data.id;
    const started = await customer.dashboard.request('POST', `/orders/${id}/payment`);
    expect(started.body.data.payment.nextStep).toBe('verify');
    const verified = await Promise.all(
      Array.from({ length: 5 }, () => customer.dashboard.request('POST', `/orders/${id}/payment/verify`)),
    );
    expect(verified.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    expect(verified[0]!.body.data.status).toBe('paid');

    expect(await callModelAndReadTokens(customer)).toBe(String(50_000 - 120));
  });

  it('through Stripe Checkout confirmed by a signed webhook, then calling a model with it', async () => {
    const customer = await signUpCustomer(stack);
    const order = await customer.dashboard.request('POST', '/orders', {
      packageId: 'e2e-tokens',
      provider: 'stripe',
    });
    expect(order.status).toBe(201);
    const id = order.body.data.id;
    const started = await customer.dashboard.request('POST', `/orders/${id}/payment`);
    expect(started.body.data.payment).toMatchObject({
      nextStep: 'redirect',
      redirectUrl: expect.any(String),
    });
    const pending = await customer.dashboard.request('POST', `/orders/${id}/payment/verify`);
    expect(pending.status).toBe(402);
    expect(pending.body.code).toBe('payment_pending');

    const session = [...fake.sessions.values()].find((candidate) => candidate.client_reference_id === id)!;
    expect(session.amount_total).toBe(900);
    const payload = JSON.stringify(
      fake.eventFor('checkout.session.completed', fake.pay(session.id)),
      null,
      2,
    );
    const signature = new Stripe('sk_test_unused').webhooks.generateTestHeaderString({
      payload,
      secret: WEBHOOK_SECRET,
    });
    // Three deliveries of the event and twenty verifies, all at once: one grant.
    const deliver = () =>
      fetch(`${stack.controlPlaneUrl}/api/v1/payments/stripe/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': signature },
        body: payload,
      });
    const [deliveries, verifies] = await Promise.all([
      Promise.all([deliver(), deliver(), deliver()]),
      Promise.all(
        Array.from({ length: 20 }, () => customer.dashboard.request('POST', `/orders/${id}/payment/verify`)),
      ),
    ]);
    expect(deliveries.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(verifies.every((answer) => answer.status === 200)).toBe(true);
    const paid = await customer.dashboard.request('GET', `/orders/${id}`);
    expect(paid.body.data).toMatchObject({ status: 'paid', payment: { status: 'succeeded' } });
    const grants = await stack.db.query(
      `select count(*)::int as count from ledger_entries where account_id = $1 and kind = 'grant'`,
      [customer.accountId],
    );
    expect(grants.rows[0].count).toBe(1);

    expect(await callModelAndReadTokens(customer)).toBe(String(50_000 - 120));
  });
});
