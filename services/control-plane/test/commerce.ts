/** Fixtures of the commerce tests: catalogue with USD, JPY and huge prices, customers, admins, webhooks. */
import type { StripeFake } from '@tollgate/test-harness';
import Stripe from 'stripe';
import { expect } from 'vitest';
import { findAccountByEmail, setAccountRoles } from '../src/modules/accounts/accounts.service.ts';
import { verifyLedger } from '../src/modules/billing/ledger-check.ts';
import { seedCatalog, TEST_CATALOG } from './billing.ts';
import { createClient, type TestClient, uniqueEmail } from './client.ts';
import type { TestContext } from './context.ts';

export const WEBHOOK_SECRET = 'whsec_test_commerce_0123456789abcdef';
/** Beyond 2^53: JSON numbers would lose it, strings do not. */
export const HUGE_PRICE = '90071992547409931';

export const COMMERCE_CATALOG = `${TEST_CATALOG}
  - { id: usd, name: USD pack, tokens: 1000, validity_days: 30, aliases: [tokens-only],
      price: { amount: "1999", currency: USD, exponent: 2 } }
  - { id: jpy, name: JPY pack, tokens: 5000, price: { amount: "999", currency: JPY, exponent: 0 } }
  - { id: giant, name: Giant, tokens: "36028797018963968", price: { amount: "${HUGE_PRICE}", currency: USD, exponent: 2 } }
`;

export function commerceEnv(fake?: StripeFake): Record<string, string> {
  return {
    TRUST_PROXY: 'true',
    PAYMENT_PROVIDERS: fake ? 'stripe,development,manual' : 'development,manual',
    ORDER_TTL_MINUTES: '5',
    PAYMENT_RECHECK_SECONDS: '1',
    // Tests name codes many times from one account; promotions.throttle.test.ts tests the limits.
    PROMOTION_CODE_ACCOUNT_LIMIT: '1000',
    PROMOTION_CODE_ADDRESS_LIMIT: '1000',
    ...(fake
      ? { STRIPE_SECRET_KEY: fake.secretKey, STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_API_URL: fake.url }
      : {}),
  };
}

export async function seedCommerceCatalog(context: TestContext): Promise<void> {
  await seedCatalog(context, COMMERCE_CATALOG);
}

export interface Shopper {
  client: TestClient;
  accountId: string;
  email: string;
}

export async function shopper(context: TestContext, options: { admin?: boolean } = {}): Promise<Shopper> {
  const client = createClient(context);
  const email = uniqueEmail(options.admin ? 'admin' : 'shop');
  await client.signUp(email, 'a long enough password');
  const account = (await findAccountByEmail(context.deps.db, email))!;
  if (options.admin) await setAccountRoles(context.deps.db, account.id, { admin: true });
  expect((await client.logIn(email, 'a long enough password')).status).toBe(200);
  return { client, accountId: account.id, email };
}

/** Delivers an event to the webhook as Stripe would, signed with the real helper. */
export async function deliverWebhook(
  context: TestContext,
  event: Record<string, unknown>,
  options: { secret?: string; timestamp?: number } = {},
) {
  const payload = JSON.stringify(event, null, 2);
  const signature = new Stripe('sk_test_unused').webhooks.generateTestHeaderString({
    payload,
    secret: options.secret ?? WEBHOOK_SECRET,
    ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp }),
  });
  const response = await context.publicApp.request('/api/v1/payments/stripe/webhook', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': signature },
    body: payload,
  });
  // biome-ignore lint/suspicious/noExplicitAny: bodies are checked by the tests' assertions
  return { status: response.status, body: (await response.json()) as any };
}

/** Entitlements granted by an order and ledger grant rows of the account. */
export async function grantsOf(context: TestContext, accountId: string) {
  const entitlements = await context.deps.db
    .selectFrom('entitlements')
    .selectAll()
    .where('account_id', '=', accountId)
    .execute();
  const grants = await context.deps.db
    .selectFrom('ledger_entries')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('kind', '=', 'grant')
    .execute();
  return { entitlements, grants };
}

export async function expectLedgerConsistent(context: TestContext): Promise<void> {
  expect(await verifyLedger(context.deps.db)).toEqual([]);
}

/** Creates a promotion as an admin through the API; returns its view. */
export async function createPromotionAs(admin: Shopper, body: Record<string, unknown>) {
  const created = await admin.client.request('POST', '/admin/promotions', { body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data;
}
