/**
 * Automatic top-up with the running services (gateway, control plane, Postgres, Redis with the hot
 * tier): a customer keeps a card with a Stripe top-up (a local fake of the Stripe API, confirmed
 * by a signed webhook), turns automatic top-up on, and 50 concurrent calls through the gateway
 * cross the threshold at once: exactly one PaymentIntent is created and one grant is written.
 */
import { type StripeFake, startStripeFake } from '@tollgate/test-harness';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openaiClient } from '../src/clients.ts';
import { signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger } from '../src/ledger.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

const WEBHOOK_SECRET = 'whsec_e2e_auto_top_up_7d41a2c9';

let stack: E2EStack;
let fake: StripeFake;

beforeAll(async () => {
  fake = await startStripeFake();
  stack = await startStack('auto-top-up', {
    controlPlaneEnv: {
      PAYMENT_PROVIDERS: 'stripe',
      STRIPE_SECRET_KEY: fake.secretKey,
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_API_URL: fake.url,
      // 50 calls of one key at once.
      KEY_MAX_CONCURRENCY: '64',
    },
  });
}, 120_000);

afterAll(async () => {
  await closeCheckingLedger(stack);
  await fake?.close();
});

/** Delivers an event to the control plane's webhook, signed as Stripe signs it. */
async function deliver(event: Record<string, unknown>): Promise<{ status: number; outcome: string }> {
  const payload = JSON.stringify(event, null, 2);
  const signature = new Stripe('sk_test_unused').webhooks.generateTestHeaderString({
    payload,
    secret: WEBHOOK_SECRET,
  });
  const response = await fetch(`${stack.controlPlaneUrl}/api/v1/payments/stripe/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': signature },
    body: payload,
  });
  const body = (await response.json()) as { data?: { outcome: string } };
  return { status: response.status, outcome: body.data?.outcome ?? '' };
}

async function orderGrants(accountId: string): Promise<bigint[]> {
  const { rows } = await stack.db.query<{ amount: string }>(
    `select amount from ledger_entries
      where account_id = $1 and kind = 'grant' and entitlement_id is null and cause like 'order %'
      order by created_at`,
    [accountId],
  );
  return rows.map((row) => BigInt(row.amount));
}

describe('automatic top-up', () => {
  it('50 concurrent calls crossing the threshold make exactly one PaymentIntent and one grant', async () => {
    const customer = await signUpCustomer(stack);
    // A top-up of 5.00 USD through Stripe Checkout that keeps the card: 5,000,000 credits.
    const created = await customer.dashboard.request('POST', '/top-ups', {
      amount: '500',
      provider: 'stripe',
      savePaymentMethod: true,
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    await customer.dashboard.request('POST', `/orders/${id}/payment`);
    const session = [...fake.sessions.values()].find((candidate) => candidate.client_reference_id === id)!;
    const paid = await deliver(fake.eventFor('checkout.session.completed', fake.pay(session.id)));
    expect(paid).toEqual({ status: 200, outcome: 'paid' });
    expect((await customer.dashboard.request('GET', '/me/auto-top-up')).body.data.cardSaved).toBe(true);

    // Each call costs 100 × 2 + 20 × 8 = 360 credits: the 50 calls (18,000) cross 4,990,000.
    const enabled = await customer.dashboard.request('PUT', '/me/auto-top-up', {
      enabled: true,
      threshold: '4990000',
      amount: '1000',
    });
    expect(enabled.status).toBe(200);
    const { secret } = await customer.createKey({ name: 'auto', limits: { concurrency: 50 } });
    const client = openaiClient(stack.gatewayUrl, secret);
    const calls = await Promise.all(
      Array.from({ length: 50 }, () =>
        client.chat.completions.create({
          model: 'gpt-e2e',
          max_tokens: 64,
          messages: [{ role: 'user', content: 'Hello @mock(input_tokens=100,output_tokens=20)' }],
        }),
      ),
    );
    expect(calls.every((call) => call.usage?.completion_tokens === 20)).toBe(true);

    // The charge happens after the settlements answered: wait for its order, bounded.
    let automatic: { status: string; grants: { credits: string } }[] = [];
    for (let attempt = 0; attempt < 100 && automatic[0]?.status !== 'paid'; attempt++) {
      // Checked every 100 ms for up to 10 s: the check runs in the background after the settlements.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const orders = await customer.dashboard.request('GET', '/orders');
      automatic = orders.body.data.items.filter((order: { automatic: boolean }) => order.automatic);
    }
    expect(automatic).toHaveLength(1);
    expect(automatic[0]).toMatchObject({ status: 'paid', grants: { credits: '10000000' } });
    expect(fake.charges).toHaveLength(1);
    expect(fake.charges[0]).toMatchObject({ amount: 1000, currency: 'usd', off_session: true });

    // Stripe's own word on the charge, delivered three times, grants nothing more.
    const event = fake.paymentIntentEventFor('payment_intent.succeeded', fake.charges[0]!);
    const replays = await Promise.all([deliver(event), deliver(event), deliver(event)]);
    for (const replay of replays) {
      expect(replay.status).toBe(200);
      expect(['already_paid', 'duplicate']).toContain(replay.outcome);
    }
    expect(await orderGrants(customer.accountId)).toEqual([5_000_000n, 10_000_000n]);
    expect(fake.charges).toHaveLength(1);
    // Every call settled at 360 credits (the hot tier writes them to Postgres in batches).
    for (let attempt = 0; attempt < 100; attempt++) {
      const { rows } = await stack.db.query<{ settled: number }>(
        `select count(*)::int as settled from reservations where account_id = $1 and status = 'settled'`,
        [customer.accountId],
      );
      if (rows[0]?.settled === 50 && (await stack.callsInRedis(customer.accountId)) === 0) break;
      // Polled every 100 ms for up to 10 s: the processes announce no settlement to the test.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const balance = await customer.dashboard.request('GET', '/me/balance');
    expect(balance.body.data.remaining.credits).toBe(String(15_000_000 - 50 * 360));
  });
});
