/**
 * Money beside credits in Chromium against the real services (the catalogue's credit is worth
 * 0.000001 USD): the overview balance, the models page's prices per million tokens, a call's cost
 * in the request log and its receipt; a top-up of a typed amount through the development provider
 * and through Stripe keeping the card (a local fake of the Stripe API), then automatic top-up
 * turned on. axe at 1280 and 390 px on each screen; screenshots kept.
 */
import { randomBytes } from 'node:crypto';
import { type StripeFake, startStripeFake } from '@tollgate/test-harness';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessibilityViolations, ensureDashboardBuilt, launchChromium, screenshot } from '../src/browser.ts';
import { openaiClient } from '../src/clients.ts';
import { DashboardSession } from '../src/customer.ts';
import { closeCheckingLedger, Meter } from '../src/ledger.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

let stack: E2EStack;
let fake: StripeFake;
let browser: Browser;
let page: Page;
let base: string;
let accountId: string;
const email = `money-${randomBytes(5).toString('hex')}@example.test`;
const password = `correct horse ${randomBytes(5).toString('hex')}`;

beforeAll(async () => {
  await ensureDashboardBuilt();
  fake = await startStripeFake();
  stack = await startStack('dashboard-money', {
    controlPlaneEnv: {
      PAYMENT_PROVIDERS: 'development,stripe',
      STRIPE_SECRET_KEY: fake.secretKey,
      STRIPE_WEBHOOK_SECRET: 'whsec_e2e_dashboard_money_19c3',
      STRIPE_API_URL: fake.url,
    },
  });
  base = stack.controlPlaneUrl;
  accountId = (await stack.admin('create-account', email, '--password', password)).accountId;
  await stack.admin('grant-credit', email, '12345678');
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${base}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: /Welcome/ }).waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (stack) await closeCheckingLedger(stack);
  await fake?.close();
});

/** axe at the desktop width and at 390 px (a phone), back to desktop after. */
async function expectAccessible(screen: string): Promise<void> {
  expect(await accessibilityViolations(page), `axe on ${screen}`).toEqual([]);
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await accessibilityViolations(page), `axe on ${screen} at 390 px`).toEqual([]);
  await screenshot(page, `${screen}-390`);
  await page.setViewportSize({ width: 1280, height: 860 });
}

describe('money beside credits in Chromium', () => {
  it('shows the balance, prices and a call’s cost in money', { timeout: 180_000 }, async () => {
    await page.goto(`${base}/`);
    await expect.poll(() => page.getByTestId('credit-money').textContent()).toBe('USD 12.34');
    await expectAccessible('money-overview');

    await page.goto(`${base}/models`);
    await page.getByTestId('credit-worth').waitFor();
    expect(await page.getByTestId('credit-worth').textContent()).toContain(
      'One credit is worth USD 0.000001',
    );
    // gpt-e2e: 2 credits an input token, 8 an output token.
    const row = page.getByRole('row', { name: /gpt-e2e/ }).first();
    expect(await row.textContent()).toContain('USD 2.00 / M tokens');
    expect(await row.textContent()).toContain('USD 8.00 / M tokens');
    await expectAccessible('money-models');

    // One call: 100 × 2 + 20 × 8 = 360 credits, USD 0.00036.
    const api = new DashboardSession(base);
    await api.logIn(email, password);
    const key = await api.request('POST', '/me/api-keys', { name: 'money' });
    const meter = new Meter(stack, accountId);
    await meter.mark();
    await openaiClient(stack.gatewayUrl, key.body.data.secret).chat.completions.create({
      model: 'gpt-e2e',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello @mock(input_tokens=100,output_tokens=20)' }],
    });
    await meter.finished(1);
    await page.goto(`${base}/requests`);
    await page.getByText('360 credits (USD 0.00036)').first().waitFor();
    await page
      .getByRole('button', { name: /Show the receipt/ })
      .first()
      .click();
    await expect.poll(() => page.getByTestId('receipt-money').textContent()).toBe('USD 0.00036');
    await expectAccessible('money-receipt');
  });

  it('tops up a typed amount, granted once, and shows the new balance in money', {
    timeout: 180_000,
  }, async () => {
    await page.goto(`${base}/buy#top-up`);
    await page.getByLabel('Amount (USD)').fill('4.99');
    await page.getByRole('button', { name: 'Top up' }).click();
    await page.getByText('Top up between 5.00 and 500.00 USD.').first().waitFor();
    await page.getByLabel('Amount (USD)').fill('12.34');
    expect(await page.getByTestId('top-up-credits').textContent()).toBe(
      'You get 12,340,000 credits for USD 12.34.',
    );
    await expectAccessible('money-buy');
    await page.getByRole('button', { name: 'Top up' }).click();
    await page.getByRole('heading', { name: 'Credit top-up' }).waitFor();
    expect(await page.getByTestId('order-credits').textContent()).toBe('12,340,000 USD 12.34');
    await page.getByRole('button', { name: 'Pay now' }).click();
    await page.getByRole('button', { name: 'Complete payment' }).click();
    await page.getByText('paid', { exact: true }).first().waitFor();
    await expectAccessible('money-top-up-order');
    await page.goto(`${base}/`);
    // 12,345,678 − 360 + 12,340,000 = 24,685,318 credits.
    await expect.poll(() => page.getByTestId('credit-money').textContent()).toBe('USD 24.68');
    const { rows } = await stack.db.query(
      `select count(*)::int as count from ledger_entries
        where account_id = $1 and kind = 'grant' and cause like 'order %'`,
      [accountId],
    );
    expect(rows[0].count).toBe(1);
  });

  it('keeps a card with a Stripe top-up and turns automatic top-up on', { timeout: 180_000 }, async () => {
    await page.goto(`${base}/buy#top-up`);
    await page.getByText('Keep a card first').waitFor();
    await page.getByLabel('Amount (USD)').fill('5');
    await page.getByLabel('Pay by card and keep the card for automatic top-ups').check();
    await page.getByRole('button', { name: 'Top up' }).click();
    await page.getByRole('heading', { name: 'Credit top-up' }).waitFor();
    const orderId = page.url().split('/').pop()!;
    // The fake's checkout address (.test) resolves nowhere: the browser is shown a stand-in page.
    await page.route('https://checkout.stripe.test/**', (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<title>Checkout</title>' }),
    );
    await page.getByRole('button', { name: 'Pay now' }).click();
    // The browser goes to Stripe Checkout (the fake's address); the customer pays there and comes back.
    const sessionOf = () =>
      [...fake.sessions.values()].find((candidate) => candidate.client_reference_id === orderId);
    await expect.poll(() => sessionOf() !== undefined).toBe(true);
    // The browser is on its way to the checkout page: going elsewhere before it arrives is refused.
    await page.waitForURL((url) => url.hostname === 'checkout.stripe.test');
    fake.pay(sessionOf()!.id);
    await page.goto(`${base}/orders/${orderId}`);
    await page.getByRole('button', { name: 'Check payment' }).click();
    await page.getByText('paid', { exact: true }).first().waitFor();

    await page.goto(`${base}/buy#top-up`);
    await page.getByLabel('When credit falls below (USD)').fill('10');
    await page.getByLabel('Top up by (USD)').fill('20');
    await page.getByRole('button', { name: 'Turn on' }).click();
    await expect
      .poll(() => page.getByTestId('auto-top-up-state').textContent())
      .toBe('On: when your credit falls below USD 10.00, the kept card is charged USD 20.00 once.');
    await expectAccessible('money-auto-top-up');
  });
});
