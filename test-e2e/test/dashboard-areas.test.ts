/**
 * The buying, reseller and admin screens in Chromium against the real services: an admin creates
 * a promotion; a customer buys the example package with it through the development payment
 * provider and reads the receipt; the admin walks accounts, orders and operations; a reseller invites
 * a customer who accepts, grants it credit from its own balance, creates it a key and a management
 * key; an invited person accepts from the emailed link and ends the reseller's access in the profile.
 * Every screen passes axe and the main ones are photographed for the README.
 */
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessibilityViolations, ensureDashboardBuilt, launchChromium, screenshot } from '../src/browser.ts';
import { acceptInvitation } from '../src/customer.ts';
import { closeCheckingLedger } from '../src/ledger.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

let stack: E2EStack;
let browser: Browser;
let base: string;
const code = `WELCOME${randomBytes(3).toString('hex').toUpperCase()}`;

interface Person {
  email: string;
  password: string;
  page: Page;
}

/** An account made by the operator CLI, signed in to the dashboard in its own browser context. */
async function person(label: string, role?: 'admin' | 'reseller'): Promise<Person> {
  const email = `${label}-${randomBytes(4).toString('hex')}@example.test`;
  const password = `correct horse ${randomBytes(5).toString('hex')}`;
  await stack.admin('create-account', email, '--password', password);
  if (role) await stack.admin('set-role', email, role);
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${base}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: /Welcome/ }).waitFor();
  return { email, password, page };
}

/** axe at the desktop width and at 390 px (a phone), back to desktop after. */
async function expectAccessible(page: Page, screen: string): Promise<void> {
  expect(await accessibilityViolations(page), `axe on ${screen}`).toEqual([]);
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await accessibilityViolations(page), `axe on ${screen} at 390 px`).toEqual([]);
  await page.setViewportSize({ width: 1280, height: 860 });
}

let admin: Person;
let customer: Person;

beforeAll(async () => {
  await ensureDashboardBuilt();
  stack = await startStack('dashboard-areas', {
    controlPlaneEnv: {
      RECEIPT_SELLER: 'Tollgate Test Ltd|1 Test Street, Testville|VAT TT123',
      RECEIPT_TAX_NOTE: 'Prices include VAT at 20%.',
    },
  });
  base = stack.controlPlaneUrl;
  browser = await launchChromium();
  admin = await person('admin', 'admin');
  customer = await person('buyer');
});

afterAll(async () => {
  await browser?.close();
  if (stack) await closeCheckingLedger(stack);
});

describe('buying in the dashboard', () => {
  it('an admin creates a promotion code on the promotions screen', async () => {
    const { page } = admin;
    await page.getByRole('navigation').getByRole('link', { name: 'Promotions' }).click();
    await page.getByRole('heading', { name: 'Promotions' }).waitFor();
    await page.getByLabel('Code').fill(code);
    await page.getByLabel('Percent off').fill('10');
    await page.getByLabel('Packages (comma list; empty: all)').fill('e2e-tokens');
    await page.getByRole('button', { name: 'Create promotion' }).click();
    await page.getByTestId('promotions').getByText(code).waitFor();
    await expectAccessible(page, 'admin promotions');
  });

  it('a customer previews the code, orders, pays through the development provider and reads the receipt', async () => {
    const { page } = customer;
    await page.getByRole('navigation').getByRole('link', { name: 'Buy' }).click();
    await page.getByRole('radio', { name: /E2E tokens/ }).check();
    await page.getByLabel('Code').fill('NOSUCHCODE');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('alert').waitFor();
    await page.getByLabel('Code').fill(code);
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByTestId('promotion-preview').getByText('USD 8.10').waitFor();
    await expectAccessible(page, 'buy');
    await screenshot(page, 'buy');

    await page.getByRole('button', { name: 'Place order' }).click();
    await page.getByTestId('order-price').getByText('USD 8.10').waitFor();
    await expectAccessible(page, 'order');
    await page.getByRole('button', { name: 'Pay now' }).click();
    await page.getByRole('button', { name: 'Complete payment' }).click();
    await page.getByRole('heading', { name: 'Receipt' }).waitFor();
    await page.getByText('paid', { exact: true }).waitFor();
    // A receipt names the package, the seller, the buyer and the tax.
    await page.getByRole('heading', { name: /E2E tokens/ }).waitFor();
    const parties = page.getByTestId('receipt-parties');
    await parties.getByText('Tollgate Test Ltd').waitFor();
    await parties.getByText('VAT TT123').waitFor();
    await parties.getByText(customer.email).waitFor();
    await page.getByTestId('receipt-tax').getByText('Prices include VAT at 20%.').waitFor();
    await expectAccessible(page, 'receipt');
    await screenshot(page, 'receipt');

    await page.getByRole('link', { name: 'All orders' }).click();
    await page.getByTestId('orders').getByText('USD 8.10').waitFor();
    await page.getByTestId('orders').getByText('E2E tokens').waitFor();
    await expectAccessible(page, 'orders');
    await page.getByRole('navigation').getByRole('link', { name: 'Overview' }).click();
    await page.getByTestId('tokens-left').getByText('50,000').waitFor();
  });
});

describe('the admin area', () => {
  it('finds the customer, grants credit with a note, and sees orders and the audit log', async () => {
    const { page } = admin;
    await page.getByRole('navigation').getByRole('link', { name: 'Accounts' }).click();
    await page.getByLabel('Search by email').fill(customer.email);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: customer.email }).click();
    await page.getByRole('heading', { name: customer.email }).waitFor();
    await page.getByLabel('Credits', { exact: true }).fill('2500');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('.field-error').first().waitFor();
    await page.getByLabel('Reason (required)').fill('goodwill');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('dialog', { name: `Grant 2,500 credits to ${customer.email}?` }).waitFor();
    await page.getByRole('button', { name: 'Grant', exact: true }).click();
    await page.getByText(`Granted 2,500 credits to ${customer.email}.`).waitFor();
    await page.getByText('credit 2,500').waitFor();
    await expectAccessible(page, 'admin account');
    await screenshot(page, 'admin-account');

    await page.getByRole('navigation').getByRole('link', { name: 'All orders' }).click();
    const orders = page.getByTestId('admin-orders');
    await orders.getByText('USD 8.10').waitFor();
    // Each order names its customer, opens its details; paid orders add up per day; filters narrow.
    await orders.getByText(customer.email).first().waitFor();
    await page
      .getByTestId('revenue-per-day')
      .getByText(/: USD 8\.10 from 1 order$/)
      .waitFor();
    await orders
      .getByRole('button', { name: /^Show the details of / })
      .first()
      .click();
    await page.getByTestId('order-details').getByText('USD 0.90').waitFor();
    await expectAccessible(page, 'admin orders');
    await page.getByLabel('Status').selectOption('refunded');
    await page.getByText(/none matches the filters/).waitFor();
    await page.getByLabel('Status').selectOption('');
    await orders.waitFor();
    await page.getByRole('navigation').getByRole('link', { name: 'Operations' }).click();
    await page.getByTestId('audit').waitFor();
    await page.getByRole('heading', { name: 'Held reservations' }).waitFor();
    await page.getByText('Every provider accepts its credentials.').waitFor();
    await page.getByRole('heading', { name: 'Upstream circuit breakers' }).waitFor();
    await page.getByText('Every upstream is taking calls').waitFor();
    await page.getByRole('heading', { name: 'Margin, last 30 days' }).waitFor();
    await expectAccessible(page, 'admin operations');
    await screenshot(page, 'admin-operations');
  });
});

describe('the admin area: a new account', () => {
  it('opens an account for someone, who is emailed a link to choose a password', async () => {
    const { page } = admin;
    await page.goto(`${base}/admin`);
    const opened = `opened-${Date.now()}@example.test`;
    await page.getByRole('button', { name: 'New account' }).click();
    const form = page.getByRole('form', { name: 'New account' });
    await form.getByLabel('Email').fill(opened);
    await expectAccessible(page, 'admin: new account');
    await form.getByRole('button', { name: 'Create account' }).click();
    await page
      .getByText(/a link to choose a password was emailed/)
      .getByRole('link', { name: opened })
      .waitFor();
  });
});

describe('the reseller area', () => {
  it('invites a customer who accepts, grants it credit, creates it a key and a management key', async () => {
    const reseller = await person('reseller', 'reseller');
    await stack.admin('grant-credit', reseller.email, '10000');
    const { page } = reseller;
    await page.getByRole('navigation').getByRole('link', { name: 'Customers' }).click();
    await page
      .getByTestId('reseller-holdings-summary')
      .getByText(/10,000 credits to grant/)
      .waitFor();
    await page.getByText('No customers yet').waitFor();
    const customerEmail = `sold-${randomBytes(4).toString('hex')}@example.test`;
    await page.getByLabel('Email').fill(customerEmail);
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByText(`${customerEmail} was invited by email`).waitFor();
    await acceptInvitation(stack, customerEmail);
    await page.reload();
    await page.getByTestId('customers').getByRole('link', { name: customerEmail }).click();
    await page.getByRole('heading', { name: customerEmail }).waitFor();

    // The grant form says what the reseller still holds, before and after.
    await page.getByTestId('reseller-holdings').getByText('0 tokens and 10,000 credits').waitFor();
    await page.getByLabel('Credits').fill('20000');
    await page.getByRole('button', { name: 'Grant' }).click();
    await page
      .getByRole('alert')
      .getByText(/insufficient|not enough|holds/i)
      .waitFor();
    await page.getByLabel('Credits').fill('500');
    await page.getByRole('button', { name: 'Grant' }).click();
    await page.getByTestId('customer-credits').getByText('500').waitFor();
    await page.getByTestId('reseller-holdings').getByText('0 tokens and 9,500 credits').waitFor();
    await page.getByLabel('Key name').fill('shop');
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await page.getByTestId('secret-value').textContent()).toMatch(/^sk-tg-/);
    await page.getByRole('button', { name: 'Hide' }).click();
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByText('disabled', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Revoke shop' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText('revoked', { exact: true }).waitFor();
    await expectAccessible(page, 'reseller customer');
    await screenshot(page, 'reseller-customer');

    await page.getByRole('navigation').getByRole('link', { name: 'Management keys' }).click();
    await page.getByLabel('Name').fill('billing system');
    // Each scope says what it allows; the key can be given an expiry.
    await page.getByText('Grant customers credit or package tokens from your own holdings').waitFor();
    await page.getByRole('checkbox', { name: 'customers:read' }).check();
    await page.getByLabel('Expires on (optional, end of day UTC)').fill('2031-01-31');
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await page.getByTestId('secret-value').textContent()).toMatch(/^mk-tg-/);
    await page.getByRole('button', { name: 'Hide' }).click();
    await page.getByTestId('management-keys').getByText('billing system').waitFor();
    await page
      .getByTestId('management-keys')
      .getByText(/expires Jan 31, 2031/)
      .waitFor();
    await expectAccessible(page, 'management keys');
    await page.getByRole('button', { name: 'Revoke billing system' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await page.getByTestId('management-keys').getByText('revoked', { exact: true }).waitFor();
  });

  it('a person accepts an invitation from its link, sees the provider in the profile and ends its access', async () => {
    const reseller = await person('provider', 'reseller');
    const invitee = await person('invitee');
    await reseller.page.getByRole('navigation').getByRole('link', { name: 'Customers' }).click();
    await reseller.page.getByLabel('Email').fill(invitee.email);
    await reseller.page.getByRole('button', { name: 'Invite' }).click();
    await reseller.page.getByText(`${invitee.email} was invited by email`).waitFor();
    const { rows } = await stack.db.query<{ body_text: string }>(
      `select body_text from outbox_emails where recipient = $1 and kind = 'reseller_invitation'
       order by created_at desc limit 1`,
      [invitee.email],
    );
    const link =
      /^(http\S+\/accept-invitation#token=[0-9a-f]{64})$/m.exec(rows[0]?.body_text ?? '')?.[1] ?? '';
    expect(link.startsWith(`${base}/`)).toBe(true);

    const { page } = invitee;
    await page.goto(link);
    await page.getByRole('heading', { name: 'Accept an invitation' }).waitFor();
    await expectAccessible(page, 'accept invitation');
    await page.getByRole('button', { name: 'Accept invitation' }).click();
    // Signed in already, the person lands on the profile, which names the provider.
    await page.getByTestId('provider').getByText(reseller.email).waitFor();
    await page.getByRole('button', { name: "End this provider's access" }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'End access' }).click();
    await page.getByText('No provider manages this account.').waitFor();
    await expectAccessible(page, 'profile');
  });
});

describe('spend caps on the reseller and admin screens', () => {
  it('a reseller caps its customer and one of its keys; an admin caps the account, bounding the reseller', async () => {
    const reseller = await person('capper', 'reseller');
    const { page } = reseller;
    await page.getByRole('navigation').getByRole('link', { name: 'Customers' }).click();
    const customerEmail = `capped-${randomBytes(4).toString('hex')}@example.test`;
    await page.getByLabel('Email').fill(customerEmail);
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByText(`${customerEmail} was invited by email`).waitFor();
    const accountId = await acceptInvitation(stack, customerEmail);
    await page.reload();
    await page.getByTestId('customers').getByRole('link', { name: customerEmail }).click();
    await page.getByRole('heading', { name: customerEmail }).waitFor();
    await page.getByLabel('Key name').fill('metered');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('button', { name: 'Hide' }).click();

    // On the whole account: 5,000 credits a day.
    const form = page.getByRole('form', { name: 'Set a spend cap' });
    await page.getByText('No spend caps on this account or its keys.').waitFor();
    await form.getByLabel('On').selectOption({ label: 'the whole account' });
    await form.getByLabel('Counts').selectOption('credits');
    await form.getByLabel('Per').selectOption('day');
    await form.getByLabel('At most').fill('5000');
    await form.getByRole('button', { name: 'Save cap' }).click();
    const accountCaps = page.getByRole('list', { name: 'Spend caps on the account' });
    await accountCaps.getByText('5,000 credits per day').waitFor();
    await accountCaps.getByText(/on the account, set by you: 0 used, 5,000 left/).waitFor();
    // On its key: 1,000 tokens per rolling 5 hours.
    await form.getByLabel('On').selectOption({ label: 'key metered' });
    await form.getByLabel('Counts').selectOption('tokens');
    await form.getByLabel('Per').selectOption('5h');
    await form.getByLabel('At most').fill('1000');
    await form.getByRole('button', { name: 'Save cap' }).click();
    await page
      .getByRole('list', { name: 'Spend caps of metered' })
      .getByText('1,000 tokens per 5 hours')
      .waitFor();
    await expectAccessible(page, 'reseller customer with spend caps');

    // The admin sees both, sets its own lower day cap on the account, which bounds the reseller's.
    await admin.page.goto(`${base}/admin/accounts/${accountId}`);
    await admin.page.getByRole('heading', { name: customerEmail }).waitFor();
    const adminCaps = admin.page.getByRole('list', { name: 'Spend caps on the account' });
    await adminCaps.getByText(/set by its reseller/).waitFor();
    await admin.page
      .getByRole('list', { name: 'Spend caps of metered' })
      .getByText('1,000 tokens per 5 hours')
      .waitFor();
    const adminForm = admin.page.getByRole('form', { name: 'Set a spend cap' });
    await adminForm.getByLabel('Counts').selectOption('credits');
    await adminForm.getByLabel('Per').selectOption('day');
    await adminForm.getByLabel('At most').fill('3000');
    await adminForm.getByRole('button', { name: 'Save cap' }).click();
    await adminCaps.getByText(/3,000 credits per day\s*on the account, set by an admin/).waitFor();
    await expectAccessible(admin.page, 'admin account with spend caps');

    await page.reload();
    await page
      .getByRole('list', { name: 'Spend caps on the account' })
      .getByText(/set by the operator/)
      .waitFor();
    await form.getByLabel('Counts').selectOption('credits');
    await form.getByLabel('Per').selectOption('day');
    await form.getByLabel('At most').fill('4000');
    await form.getByRole('button', { name: 'Save cap' }).click();
    await form.getByText('At most 3000 for this account.').waitFor();
    const { rows } = await stack.db.query<{
      set_by: string;
      unit: string;
      period: string;
      amount: string;
      key: boolean;
    }>(
      `select set_by, unit, period, amount::text, key_id is not null as key from spend_caps
       where account_id = $1 order by set_by, unit`,
      [accountId],
    );
    expect(rows).toEqual([
      { set_by: 'admin', unit: 'credits', period: 'day', amount: '3000', key: false },
      { set_by: 'reseller', unit: 'credits', period: 'day', amount: '5000', key: false },
      { set_by: 'reseller', unit: 'tokens', period: '5h', amount: '1000', key: true },
    ]);
  });
});
