/**
 * The operator console in Chromium against the real services (issue 29, must-hold 1): an admin adds
 * two providers and an alias served by both, tests a provider's connection (one real call through
 * the gateway to the mock provider, its latency and answer shown, no credential), publishes the
 * alias; a customer's key calls it through the gateway, and the customer finds the call in the
 * request log with its cost and opens its receipt. Entries of the catalogue file refuse edits.
 * axe at 1280 and 390 px on each new screen; screenshots of each step.
 */
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessibilityViolations, ensureDashboardBuilt, launchChromium, screenshot } from '../src/browser.ts';
import { anthropicClient } from '../src/clients.ts';
import { DashboardSession } from '../src/customer.ts';
import { closeCheckingLedger } from '../src/ledger.ts';
import { type E2EStack, PROVIDER_KEY, type RunningMock, startStack } from '../src/stack.ts';

let stack: E2EStack;
let browser: Browser;
let base: string;
let admin: Page;
let secondMock: RunningMock;
const adminEmail = `admin-${randomBytes(4).toString('hex')}@example.test`;
const adminPassword = `correct horse ${randomBytes(5).toString('hex')}`;
const customerEmail = `customer-${randomBytes(4).toString('hex')}@example.test`;
const customerPassword = `correct horse ${randomBytes(5).toString('hex')}`;
const ALIAS = 'console-e2e';
/** What the customer's call cost, in credits (set by the call's step). */
let callCost = 0;

beforeAll(async () => {
  await ensureDashboardBuilt();
  stack = await startStack('dashboard-console');
  base = stack.controlPlaneUrl;
  secondMock = await stack.startMock('console-second');
  browser = await launchChromium();
  await stack.admin('create-account', adminEmail, '--password', adminPassword);
  await stack.admin('set-role', adminEmail, 'admin');
  await stack.admin('create-account', customerEmail, '--password', customerPassword);
  await stack.admin('grant-credit', customerEmail, '1000000');
  admin = await signedInPage(adminEmail, adminPassword);
});

afterAll(async () => {
  await browser?.close();
  if (stack) await closeCheckingLedger(stack);
});

async function signedInPage(email: string, password: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${base}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: /Welcome/ }).waitFor();
  return page;
}

/** axe at the desktop width and at 390 px (a phone), back to desktop after. */
async function expectAccessible(page: Page, screen: string): Promise<void> {
  expect(await accessibilityViolations(page), `axe on ${screen} at 1280 px`).toEqual([]);
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await accessibilityViolations(page), `axe on ${screen} at 390 px`).toEqual([]);
  await page.setViewportSize({ width: 1280, height: 860 });
}

async function addProvider(id: string, url: string, credential: string): Promise<void> {
  await admin.getByRole('button', { name: 'Add a provider' }).click();
  const form = admin.getByRole('form', { name: 'New provider' });
  await form.getByLabel('Provider id').fill(id);
  await form.getByLabel('Kind').selectOption('anthropic');
  await form.getByLabel('Base URL').fill(url);
  await form.getByLabel('Credential names').fill(credential);
  await form.getByRole('button', { name: 'Add provider' }).click();
  await admin.getByText(`Added the provider ${id}.`).waitFor();
}

describe('operator console', () => {
  it('adds two providers, tests a connection through the gateway, and refuses edits of file entries', async () => {
    await admin.getByRole('link', { name: 'Catalogue' }).click();
    await admin.getByRole('heading', { name: 'Catalogue' }).waitFor();
    await admin
      .getByTestId('catalog-rule')
      .getByText(/managed by the catalogue file/)
      .waitFor();
    // The file's provider is shown as such, with no edit button; it can still be tested.
    await expect(admin.getByRole('button', { name: 'Edit provider mock-anthropic' }).count()).resolves.toBe(
      0,
    );
    await expect(admin.getByRole('button', { name: `Edit alias claude-e2e` }).count()).resolves.toBe(0);

    await addProvider('console-a', stack.mockUrl, 'TOLLGATE_PROVIDER_MOCK_KEY');
    await addProvider('console-b', secondMock.url, 'TOLLGATE_PROVIDER_MOCK_KEY');
    await addProvider('console-unset', stack.mockUrl, 'TOLLGATE_PROVIDER_NOT_SET');

    // One real call through the gateway to the provider: status, latency and the answer, no secret.
    const test = admin.getByRole('form', { name: 'Test console-a' });
    await test.getByLabel('Model to test on console-a').fill('upstream-console-a');
    await test.getByRole('button', { name: 'Test connection of console-a' }).click();
    const result = test.getByTestId('connection-result');
    await result.getByText(/Connected: HTTP 200 in [\d,]+ ms with TOLLGATE_PROVIDER_MOCK_KEY/).waitFor();
    expect(await result.textContent()).not.toContain(PROVIDER_KEY);

    // A credential the gateways do not hold is named, with what to do.
    const unset = admin.getByRole('form', { name: 'Test console-unset' });
    await unset.getByLabel('Model to test on console-unset').fill('upstream-console-a');
    await unset.getByRole('button', { name: 'Test connection of console-unset' }).click();
    await unset.getByText(/TOLLGATE_PROVIDER_NOT_SET is not set on this gateway/).waitFor();
    await screenshot(admin, 'console-providers');
    await expectAccessible(admin, 'catalogue: providers and a test call');
  });

  it('adds an alias with two upstreams, then publishes it', async () => {
    await admin.getByRole('button', { name: 'Add an alias' }).click();
    const form = admin.getByRole('form', { name: 'New alias' });
    await form.getByLabel('Alias', { exact: true }).fill(ALIAS);
    await form.getByLabel('Anthropic Messages').check();
    const first = form.getByRole('group', { name: 'Upstream 1' });
    await first.getByLabel('Provider').selectOption('console-a');
    await first.getByLabel('Upstream model').fill('upstream-console-a');
    await first.getByLabel('Weight').fill('3');
    await form.getByRole('button', { name: 'Add an upstream' }).click();
    const second = form.getByRole('group', { name: 'Upstream 2' });
    await second.getByLabel('Provider').selectOption('console-b');
    await second.getByLabel('Upstream model').fill('upstream-console-b');
    await second.getByLabel('Requests per minute').fill('600');
    await form.getByLabel('Credits per input token').fill('3');
    await form.getByLabel('Credits per output token (reasoning included)').fill('15');
    await expectAccessible(admin, 'catalogue: the alias form');
    await screenshot(admin, 'console-alias-form');
    await form.getByRole('button', { name: 'Add alias' }).click();
    await admin.getByText(`Added the alias ${ALIAS}.`).waitFor();

    const catalog = await adminApi();
    const saved = catalog.aliases.find((alias: { alias: string }) => alias.alias === ALIAS);
    expect(saved).toMatchObject({
      published: false,
      protocols: expect.arrayContaining(['messages', 'chat_completions']),
      price: { input: '3', output: '15' },
      upstreams: [
        { providerId: 'console-a', upstreamModel: 'upstream-console-a', priority: 0, weight: 3 },
        {
          providerId: 'console-b',
          upstreamModel: 'upstream-console-b',
          priority: 0,
          weight: 1,
          requestsPerMinute: 600,
        },
      ],
    });

    await admin.getByRole('button', { name: `Publish ${ALIAS}` }).click();
    await admin.getByText(`${ALIAS} is published: keys may call it.`).waitFor();
    await screenshot(admin, 'console-catalogue');
  });

  it('a key calls the alias through the gateway; the customer sees the call and its cost in the request log', async () => {
    // A new account's overview lists its first steps, each saying whether it is done.
    const page = await signedInPage(customerEmail, customerPassword);
    const steps = page.getByTestId('getting-started');
    await steps.getByText('Buy a token package or credit: done').waitFor();
    await steps.getByRole('link', { name: 'API keys' }).waitFor();
    await expectAccessible(page, 'overview: getting started');
    await screenshot(page, 'console-getting-started');

    const customerApi = new DashboardSession(base);
    await customerApi.logIn(customerEmail, customerPassword);
    const created = await customerApi.request('POST', '/me/api-keys', { name: 'console key' });
    expect(created.status).toBe(201);
    const client = anthropicClient(stack.gatewayUrl, { apiKey: created.body.data.secret });
    const { data: message, response } = await client.messages
      .create({
        model: ALIAS,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'Hello from the console walk' }],
      })
      .withResponse();
    const requestId = response.headers.get('x-request-id') ?? '';
    const cost = (message.usage as unknown as { cost: number }).cost;
    expect(cost).toBeGreaterThan(0);
    callCost = cost;
    // With the hot tier, a finished call reaches Postgres (which the log reads) in a batch.
    for (
      let round = 0;
      round < 100 && (await stack.callsInRedis(await accountIdOf(customerEmail))) > 0;
      round++
    ) {
      // Polls the hot tier's flush, at most 10 s.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    await page.getByRole('link', { name: 'Request log' }).click();
    const log = page.getByTestId('request-log');
    const row = log.getByRole('row').filter({ hasText: ALIAS });
    // In credits and in money (the stack's catalogue: one credit is USD 0.000001).
    await row.getByText(`${cost.toLocaleString('en-US')} credits (USD `).waitFor();
    await row.getByText('console key').waitFor();
    await row.getByText('completed').waitFor();
    await row.getByRole('button', { name: /Show the receipt/ }).click();
    await page.getByTestId('receipt').getByText(requestId).waitFor();
    await screenshot(page, 'console-request-log');
    await expectAccessible(page, 'request log');
    // Once a call is made, the steps are gone.
    // A fresh load: the dashboard keeps what it read for 30 s, and this call came from outside it.
    await page.goto(`${base}/`);
    await page.getByTestId('activity').getByText(ALIAS).first().waitFor();
    await expect(page.getByTestId('getting-started').count()).resolves.toBe(0);
  });

  it('the operator sees the customer’s balance, spend and last call, and usage by customer, day and key', async () => {
    expect(callCost).toBeGreaterThan(0);
    const spent = `${callCost.toLocaleString('en-US')} credits`;
    await admin.goto(`${base}/admin`);
    await admin.getByLabel('Search by email').fill(customerEmail);
    await admin.getByRole('button', { name: 'Search' }).click();
    const row = admin.getByTestId('accounts').getByRole('row').filter({ hasText: customerEmail });
    // Granted 1,000,000 credits, less the call.
    await row
      .getByText((1_000_000 - callCost).toLocaleString('en-US'))
      .first()
      .waitFor();
    await row.getByTestId('account-spent').getByText(spent).waitFor();
    await row.getByText('1 call', { exact: true }).waitFor();
    await expect(row.getByText('never').count()).resolves.toBe(0);
    await admin.getByLabel('Spend over').selectOption('7');
    await admin.getByRole('columnheader', { name: 'Spent, last 7 days' }).waitFor();
    await screenshot(admin, 'console-accounts-spend');
    await expectAccessible(admin, 'accounts with balance and spend');

    await admin.getByRole('navigation').getByRole('link', { name: 'Usage and spend' }).click();
    const report = admin.getByTestId('usage-report');
    await report.getByRole('button', { name: `Per day for ${customerEmail}` }).waitFor();
    await report
      .getByRole('row')
      .filter({ hasText: customerEmail })
      .getByText(callCost.toLocaleString('en-US'))
      .first()
      .waitFor();
    await screenshot(admin, 'console-usage-by-customer');
    await expectAccessible(admin, 'usage by customer');
    await report.getByRole('button', { name: `Per day for ${customerEmail}` }).click();
    await admin.getByRole('columnheader', { name: 'Day' }).waitFor();
    await admin.getByLabel('Per', { exact: true }).selectOption('key');
    await admin.getByTestId('usage-report').getByText('console key').waitFor();
    await screenshot(admin, 'console-usage-by-key');
    await expectAccessible(admin, 'usage of one customer by key');

    // The customer's own usage, per day and key, in its timezone (UTC: it set none).
    const page = await signedInPage(customerEmail, customerPassword);
    await page.getByRole('navigation').getByRole('link', { name: 'Usage' }).click();
    await page.getByLabel('Per', { exact: true }).selectOption('key');
    const own = page.getByTestId('usage-table');
    await own.getByText(callCost.toLocaleString('en-US')).first().waitFor();
    await page.getByRole('columnheader', { name: 'Day (UTC)' }).waitFor();
    await screenshot(page, 'console-customer-usage-by-key');
    await expectAccessible(page, 'customer usage by key');
  });
});

// biome-ignore lint/suspicious/noExplicitAny: the admin catalogue's JSON, checked field by field
async function adminApi(): Promise<any> {
  const session = new DashboardSession(base);
  await session.logIn(adminEmail, adminPassword);
  return (await session.request('GET', '/admin/catalog')).body.data;
}

async function accountIdOf(email: string): Promise<string> {
  const { rows } = await stack.db.query<{ id: string }>('select id from accounts where email = $1', [email]);
  return rows[0]?.id ?? '';
}
