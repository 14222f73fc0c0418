/**
 * Admin actions that cannot slip, in Chromium against the real services: every money-moving form
 * is confirmed in a dialog naming the amount and the account, needs a reason kept in the audit
 * row, and carries one idempotency key per submitted form, so a lost answer retried, or a double
 * click, grants or refunds once. The grant form starts empty after success and a new type starts
 * empty; role and status changes are confirmed. The audit log names each action, actor and target
 * by email with details, filtered and paged. axe at 1280 and 390 px on each screen.
 */
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessibilityViolations, ensureDashboardBuilt, launchChromium, screenshot } from '../src/browser.ts';
import { anthropicClient } from '../src/clients.ts';
import { type Customer, DashboardSession, signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger } from '../src/ledger.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

let stack: E2EStack;
let browser: Browser;
let base: string;
let page: Page;
let adminApi: DashboardSession;
let customer: Customer;
const adminEmail = `admin-${randomBytes(4).toString('hex')}@example.test`;
const adminPassword = `correct horse ${randomBytes(5).toString('hex')}`;
const failedRequests: string[] = [];

beforeAll(async () => {
  await ensureDashboardBuilt();
  stack = await startStack('dashboard-admin');
  base = stack.controlPlaneUrl;
  browser = await launchChromium();
  await stack.admin('create-account', adminEmail, '--password', adminPassword);
  await stack.admin('set-role', adminEmail, 'admin');
  adminApi = new DashboardSession(base);
  await adminApi.logIn(adminEmail, adminPassword);
  customer = await signUpCustomer(stack, {}, { byOperator: true });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('response', (response) => {
    if (response.status() >= 400) failedRequests.push(`${response.status()} ${response.url()}`);
  });
});

afterAll(async () => {
  await browser?.close();
  if (stack) await closeCheckingLedger(stack);
});

/** axe at the desktop width and at 390 px (a phone), back to desktop after. */
async function expectAccessible(screen: string): Promise<void> {
  expect(await accessibilityViolations(page), `axe on ${screen} at 1280 px`).toEqual([]);
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await accessibilityViolations(page), `axe on ${screen} at 390 px`).toEqual([]);
  await page.setViewportSize({ width: 1280, height: 860 });
}

async function credits(): Promise<string> {
  return (await customer.dashboard.request('GET', '/me/balance')).body.data.remaining.credits;
}

describe('admin actions that cannot slip', () => {
  it('a signed-out visitor’s first screen asks nothing that fails; the admin logs in', async () => {
    await page.goto(`${base}/`);
    await page.getByLabel('Email').waitFor();
    expect(failedRequests).toEqual([]);
    await expectAccessible('log in');
    await page.goto(`${base}/signup`);
    await page.getByRole('button', { name: 'Email me a code' }).waitFor();
    await expectAccessible('sign up');
    expect(failedRequests).toEqual([]);
    await page.goto(`${base}/login`);
    await page.getByLabel('Email').fill(adminEmail);
    await page.getByLabel('Password').fill(adminPassword);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
  });

  it('a network error keeps the admin signed in; the session is asked for again', async () => {
    await page.route('**/api/v1/me', (route) => route.abort('failed'));
    await page.reload();
    // Unreachable for a while: never sent to the login screen.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(new URL(page.url()).pathname).toBe('/');
    await page.unroute('**/api/v1/me');
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/');
  });

  it('grants once when the answer is lost and the admin confirms again, and once on a double click', async () => {
    await page.goto(`${base}/admin/accounts/${customer.accountId}`);
    await page.getByRole('heading', { name: customer.email }).waitFor();

    // A typed amount does not carry over into another kind of grant.
    await page.getByLabel('Credits', { exact: true }).fill('500000');
    await page.getByLabel('What').selectOption('package');
    await expect(page.getByLabel('Package', { exact: true }).inputValue()).resolves.toBe('');
    // Packages are chosen by name; the confirmation names the package and the account.
    await page.getByLabel('Package', { exact: true }).selectOption('e2e-tokens');
    await page.getByLabel('Reason (required)').fill('trial package');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page
      .getByRole('dialog', { name: `Grant the package E2E tokens to ${customer.email}?` })
      .getByRole('button', { name: 'Grant', exact: true })
      .click();
    await page.getByText(`Granted the package E2E tokens to ${customer.email}.`).waitFor();
    await page.getByLabel('What').selectOption('package');
    await page.getByLabel('What').selectOption('credits');
    await expect(page.getByLabel('Credits', { exact: true }).inputValue()).resolves.toBe('');

    // Without a reason nothing is sent: the field says why, with one summary.
    await page.getByLabel('Credits', { exact: true }).fill('500000');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('Say why (the reason is kept in the audit log).').waitFor();
    await page.getByText('Check the field marked below.').waitFor();
    await page.getByLabel('Reason (required)').fill('launch goodwill');
    await page.getByRole('button', { name: 'Apply' }).click();
    const dialog = page.getByRole('dialog', { name: `Grant 500,000 credits to ${customer.email}?` });
    await dialog.waitFor();
    await dialog.getByText('launch goodwill').waitFor();
    await expectAccessible('grant confirmation');
    await screenshot(page, 'admin-grant-confirm');

    // The first answer is lost on the way back (the service granted); the admin confirms again.
    let lost = false;
    await page.route('**/api/v1/admin/accounts/*/grants', async (route) => {
      if (lost) return route.continue();
      lost = true;
      await route.fetch();
      await route.abort('failed');
    });
    await dialog.getByRole('button', { name: 'Grant', exact: true }).click();
    await dialog.getByText(/could not be reached/).waitFor();
    expect(await credits()).toBe('500000');
    await dialog.getByRole('button', { name: 'Grant', exact: true }).click();
    await page.getByText(`Granted 500,000 credits to ${customer.email}.`).waitFor();
    await page.unroute('**/api/v1/admin/accounts/*/grants');
    expect(await credits()).toBe('500000');

    // The form starts empty: Apply again is a new, deliberate grant, not a repeat.
    await expect(page.getByLabel('Credits', { exact: true }).inputValue()).resolves.toBe('');
    await expect(page.getByLabel('Reason (required)').inputValue()).resolves.toBe('');
    await page.getByTestId('account-balance').getByText('credit 500,000').waitFor();

    // A double click on the confirmation grants once.
    await page.getByLabel('Credits', { exact: true }).fill('1000');
    await page.getByLabel('Reason (required)').fill('second grant');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page
      .getByRole('dialog', { name: `Grant 1,000 credits to ${customer.email}?` })
      .getByRole('button', { name: 'Grant', exact: true })
      .dblclick();
    await page.getByText(`Granted 1,000 credits to ${customer.email}.`).waitFor();
    expect(await credits()).toBe('501000');

    // An adjustment names what it takes.
    await page.getByLabel('What').selectOption('adjust');
    await page.getByLabel('Credits (+/-)').fill('-1000');
    await page.getByLabel('Reason (required)').fill('duplicate grant');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page
      .getByRole('dialog', { name: `Take 1,000 credits from ${customer.email}?` })
      .getByRole('button', { name: 'Adjust' })
      .click();
    await page.getByText(`Took 1,000 credits from ${customer.email}.`).waitFor();
    expect(await credits()).toBe('500000');
    await expectAccessible('admin account');
  });

  it('suspend and roles are confirmed first, naming the account', async () => {
    await page.getByRole('button', { name: 'Make admin' }).click();
    const dialog = page.getByRole('dialog', { name: `Make ${customer.email} an admin?` });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Suspend' }).click();
    await page
      .getByRole('dialog', { name: `Suspend ${customer.email}?` })
      .getByRole('button', { name: 'Suspend' })
      .click();
    await page.getByText(`${customer.email} is suspended.`).waitFor();
    const account = await adminApi.request('GET', `/admin/accounts/${customer.accountId}`);
    expect(account.body.data).toMatchObject({ status: 'suspended', isAdmin: false });
    await page.getByRole('button', { name: 'Reactivate' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Reactivate' }).click();
    await page.getByText(`${customer.email} is active again.`).waitFor();
  });

  it('a refund needs a confirmation naming amount and account and a reason; a double click refunds once', async () => {
    const order = await customer.dashboard.request('POST', '/orders', {
      packageId: 'e2e-tokens',
      provider: 'development',
    });
    expect(order.status).toBe(201);
    const id = order.body.data.id as string;
    expect((await customer.dashboard.request('POST', `/orders/${id}/payment`)).status).toBe(200);
    expect((await customer.dashboard.request('POST', `/orders/${id}/payment/verify`)).body.data.status).toBe(
      'paid',
    );

    await page.goto(`${base}/admin/orders`);
    await page.getByRole('button', { name: `Refund ${order.body.data.reference}` }).click();
    const dialog = page.getByRole('dialog', {
      name: `Refund USD 9.00 (order ${order.body.data.reference})?`,
    });
    await dialog.getByText(customer.email).waitFor();
    await dialog.getByRole('button', { name: 'Refund' }).click();
    await dialog.getByText('Say why the order is refunded.').waitFor();
    await dialog.getByLabel('Reason (required)').fill('bought by mistake');
    await expectAccessible('refund confirmation');
    await dialog.getByRole('button', { name: 'Refund' }).dblclick();
    await page.getByText(`Order ${order.body.data.reference} refunded (USD 9.00).`).waitFor();

    const audit = await adminApi.request('GET', `/admin/audit?action=order.refund&targetId=${id}`);
    expect(audit.body.data.items).toHaveLength(1);
    expect(audit.body.data.items[0]).toMatchObject({
      actor: { email: adminEmail },
      detail: { note: 'bought by mistake', amount: '900', currency: 'USD' },
    });
    await expectAccessible('admin orders');
  });

  it('held calls are settled or released behind a confirmation naming what they hold and the account, with a reason', async () => {
    // A call whose answer has no usage is held for an operator (nothing billed on an estimate).
    const key = await customer.createKey({ name: 'held' });
    for (let call = 0; call < 2; call += 1) {
      await anthropicClient(stack.gatewayUrl, { apiKey: key.secret })
        .messages.create({
          model: 'claude-e2e',
          max_tokens: 64,
          messages: [{ role: 'user', content: 'Hi @mock(no_usage)' }],
        })
        .catch(() => undefined);
    }
    let held: { id: string }[] = [];
    for (let tries = 0; tries < 200 && held.length < 2; tries += 1) {
      held = (await adminApi.request('GET', '/admin/reservations/held')).body.data;
      // Polls: the hold is written with the settlement batch, which announces nothing to the browser test.
      if (held.length < 2) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(held).toHaveLength(2);
    const [first, second] = held as [{ id: string }, { id: string }];
    await page.goto(`${base}/admin/operations`);
    // Each held call names its account and what it holds; write-offs have their own card.
    await page.getByText(customer.email).first().waitFor();
    await page.getByRole('heading', { name: 'Written off, last 30 days' }).waitFor();
    await page.getByRole('button', { name: `Release reservation ${first.id}` }).click();
    const dialog = page.getByRole('dialog', {
      name: /^Release the claude-e2e call holding [\d,]+ tokens and [\d,]+ credits\?$/,
    });
    await dialog.getByText(customer.email).waitFor();
    // Without a reason nothing moves.
    await dialog.getByRole('button', { name: 'Release' }).click();
    await dialog.getByText('Say why (the reason is kept in the audit log).').waitFor();
    await dialog.getByLabel('Reason (required)').fill('the provider never answered');
    await expectAccessible('release confirmation');
    await dialog.getByRole('button', { name: 'Release' }).click();
    await page.getByText('Released the hold of the claude-e2e call: nothing is charged for it.').waitFor();

    // The other is settled with the usage the provider reported.
    await page.getByRole('button', { name: `Settle reservation ${second.id}` }).click();
    const settle = page.getByRole('dialog', { name: /^Settle the claude-e2e call holding/ });
    await settle.getByLabel('Input tokens').fill('10');
    await settle.getByLabel('Output tokens').fill('2');
    await settle.getByLabel('Reason (required)').fill('usage from the provider report');
    await settle.getByRole('button', { name: 'Settle' }).click();
    // claude-e2e costs 3 credits per input and 15 per output token: 10 * 3 + 2 * 15.
    await page.getByText('Settled the claude-e2e call: charged 0 tokens and 60 credits.').waitFor();
    const still = await adminApi.request('GET', '/admin/reservations/held');
    expect(still.body.data).toEqual([]);
    const audit = await adminApi.request('GET', '/admin/audit?action=admin.reservation.resolve');
    expect(audit.body.data.items[0].detail).toMatchObject({
      action: 'settle',
      note: 'usage from the provider report',
    });
  });

  it('the audit log names each action, actor and target, with details, filters and older pages', async () => {
    // Enough grants for a second page (25 a page).
    for (let index = 0; index < 26; index += 1) {
      const answer = await adminApi.request('POST', `/admin/accounts/${customer.accountId}/grants`, {
        credits: '1',
        note: `batch ${index}`,
      });
      expect(answer.status).toBe(201);
    }
    await page.goto(`${base}/admin/operations`);
    const audit = page.getByTestId('audit');
    await audit.waitFor();
    await expect(audit.getByText('api_key.reveal').count()).resolves.toBe(0);
    await page.getByLabel('Action').fill('order.refund');
    await page.getByRole('button', { name: 'Filter' }).click();
    const refund = audit.getByRole('row').filter({ hasText: 'order.refund' });
    await refund.getByText(adminEmail).waitFor();
    await refund.getByText(/note: bought by mistake/).waitFor();
    await expect(audit.getByRole('row').count()).resolves.toBe(2);

    await page.getByLabel('Action').fill('admin.grant');
    await page.getByLabel('Actor or target email').fill(customer.email);
    await page.getByRole('button', { name: 'Filter' }).click();
    await audit.getByText('note: batch 25').waitFor();
    await expect(audit.getByRole('row').count()).resolves.toBe(26);
    await expect(audit.getByRole('cell', { name: customer.email }).count()).resolves.toBe(25);
    await page.getByRole('button', { name: 'Older entries' }).click();
    await audit.getByText('note: launch goodwill').waitFor();
    await expect(audit.getByRole('row').count()).resolves.toBe(30);
    await expect(page.getByRole('button', { name: 'Older entries' }).count()).resolves.toBe(0);
    await expectAccessible('admin operations');
    await screenshot(page, 'admin-audit');
    // The catalogue says which entries the file manages and what needs a restart.
    await page.goto(`${base}/admin/catalog`);
    await page
      .getByTestId('catalog-rule')
      .getByText(/managed by the catalogue file/)
      .waitFor();
    await page
      .getByTestId('catalog-rule')
      .getByText(/restart the gateways/)
      .waitFor();
    await page.getByText('from the file').first().waitFor();
  });
});
