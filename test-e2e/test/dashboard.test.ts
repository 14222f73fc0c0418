/**
 * The dashboard walked in a real browser against the real services: a new customer signs up with
 * the code from the outbox, logs in, creates a scoped key, copies it, calls the gateway with it,
 * sees the call in activity and the chart, rotates and revokes it. Every screen passes axe with
 * no serious or critical violation and is photographed for the README; the budgets are measured.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  accessibilityViolations,
  ensureDashboardBuilt,
  initialJavaScriptGzipBytes,
  launchChromium,
  screenshot,
  signUpCodeFor,
} from '../src/browser.ts';
import { chatRequest, expectOpenAIError, openaiClient } from '../src/clients.ts';
import { closeCheckingLedger } from '../src/ledger.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

let stack: E2EStack;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let base: string;
const email = `browser-${randomBytes(5).toString('hex')}@example.test`;
const password = `correct horse ${randomBytes(5).toString('hex')}`;
let secret = '';
/** The call made with the new key: its request id and the cost its answer told. */
let callId = '';
let callCost = 0;

beforeAll(async () => {
  await ensureDashboardBuilt();
  stack = await startStack('dashboard');
  base = stack.controlPlaneUrl;
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
});

afterAll(async () => {
  await browser?.close();
  if (stack) await closeCheckingLedger(stack);
});

async function expectAccessible(screen: string): Promise<void> {
  expect(await accessibilityViolations(page), `axe on ${screen}`).toEqual([]);
}

/** Reloads until the page shows `text` (settlement leaves the response path, so it lands just after). */
async function reloadUntilVisible(text: string, within = 'main'): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    await page.reload();
    const found = page.locator(within).getByText(text).first();
    // isVisible() does not wait: give the page's own requests time to answer after each reload.
    const shown = await found
      .waitFor({ state: 'visible', timeout: 2_000 })
      .then(() => true)
      .catch(() => false);
    if (shown) return;
  }
  throw new Error(`"${text}" never appeared in ${within}`);
}

describe('the dashboard in Chromium', () => {
  // Time to an interactive first screen is printed, not asserted: a timing depends on the machine
  // and what else runs on it; the bytes shipped and the security headers do not.
  it('keeps within its budget of initial JavaScript (<= 250 KB gzipped) and sends its security headers', async () => {
    const bytes = await initialJavaScriptGzipBytes(base);
    console.info(`dashboard initial JavaScript: ${bytes} bytes gzipped`);
    expect(bytes).toBeLessThanOrEqual(250 * 1024);

    // Warm the process once (a first Chromium navigation pays for its own start-up), then measure
    // a cold-cache load in a new context: from navigation start to an enabled, focusable field.
    await page.goto(`${base}/login`);
    const fresh = await browser.newContext();
    const probe = await fresh.newPage();
    await probe.goto(`${base}/login`);
    await probe.getByLabel('Email').waitFor({ state: 'visible' });
    const interactiveMs = await probe.evaluate(() => performance.now());
    const headers = await probe.evaluate(async () => {
      const response = await fetch('/login');
      return Object.fromEntries(response.headers);
    });
    await fresh.close();
    console.info(`dashboard first screen interactive after ${Math.round(interactiveMs)} ms`);
    expect(headers['content-security-policy']).toMatch(/script-src 'self'/);
    expect(headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(headers['content-security-policy']).not.toMatch(/unsafe-inline/);
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['x-content-type-options']).toBe('nosniff');
  });

  it('shows the public screens: catalogue with package prices, and status with a live gateway', async () => {
    await page.goto(`${base}/models`);
    await expect(page.getByRole('heading', { name: 'Models and pricing' }).isVisible()).resolves.toBe(true);
    await page.getByRole('rowheader', { name: 'gpt-e2e' }).waitFor();
    await page.getByText('USD 9.00').waitFor();
    await expectAccessible('models');
    await screenshot(page, 'models');

    await page.goto(`${base}/status`);
    const gateway = page.getByTestId('component-gateway');
    await gateway.getByText('operational', { exact: true }).waitFor();
    await page.getByTestId('component-model:gpt-e2e').waitFor();
    await expectAccessible('status');
    await screenshot(page, 'status');
  });

  it('signs a new customer up with the emailed code, then logs in by keyboard', async () => {
    await page.goto(`${base}/signup`);
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    await page.getByLabel('Code from the email').waitFor();
    await expectAccessible('sign up');

    // A wrong code is refused with the message next to the field.
    await page.getByLabel('Code from the email').fill('000000');
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.locator('.field-error').first().waitFor();
    // One summary pointing at the field, and no success note of the step before beside it.
    await page.getByText('Check the field marked below.').waitFor();
    await expect(page.getByText('We sent a 6-digit code').count()).resolves.toBe(0);
    await expect(page.getByText('failed validation').count()).resolves.toBe(0);

    await page.getByLabel('Code from the email').fill(await signUpCodeFor(stack, email));
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByText('Your account is ready').waitFor();
    await stack.admin('grant-credit', email, '5000000');

    // Log in opens with the address just registered filled in.
    await expect(page.getByLabel('Email').inputValue()).resolves.toBe(email);
    await page.getByLabel('Password').focus();
    await page.keyboard.type(password);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
    await page.getByTestId('credits-left').getByText('5,000,000').waitFor();
  });

  it('creates a scoped key, copies it once, and the key calls the gateway', async () => {
    await page.goto(`${base}/keys`);
    await page.getByText('You have no API keys yet').waitFor();
    await expectAccessible('keys (empty)');
    await page.getByRole('button', { name: 'Create key' }).first().click();
    await page.getByLabel('Name').fill('laptop');
    // Each ceiling says what an empty field gives and the most it may be; sizes in KB and MB.
    await page.getByText('Ceilings (optional)').click();
    await page.getByText('Empty: 10 MB. At most 32 MB.').waitFor();
    await page.getByText('Empty: 60. At most 600.').waitFor();
    await page.getByRole('checkbox', { name: 'gpt-e2e' }).check();
    await expectAccessible('create key');
    await page.locator('form').getByRole('button', { name: 'Create key' }).click();

    const shown = page.getByTestId('secret-value');
    secret = (await shown.textContent()) ?? '';
    expect(secret).toMatch(/^sk-tg-/);
    expect(page.url()).not.toContain(secret);
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await page.getByText('Copied to the clipboard').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await shown.waitFor({ state: 'detached' });
    // The secret left the page and nothing of it was stored.
    expect(await page.content()).not.toContain(secret);
    const stored = await page.evaluate(
      () => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }),
    );
    expect(stored).not.toContain(secret);

    const card = page.getByTestId('key-laptop');
    await card.getByText('gpt-e2e').waitFor();
    await expectAccessible('keys');
    await screenshot(page, 'keys');

    const client = openaiClient(stack.gatewayUrl, secret);
    const { data: answer, response } = await client.chat.completions
      .create(chatRequest('gpt-e2e'))
      .withResponse();
    expect(answer.usage?.total_tokens).toBeGreaterThan(0);
    callId = response.headers.get('x-request-id') ?? '';
    callCost = (answer.usage as unknown as { cost: number }).cost;
    expect(callCost).toBeGreaterThan(0);
    // The scope chosen in the form holds at the gateway.
    await expectOpenAIError(
      client.chat.completions.create(chatRequest('gpt-tokens-e2e')),
      OpenAI.PermissionDeniedError,
      403,
      'model_not_allowed',
    );
  });

  it('shows the call in activity, the chart and usage, and exports it as CSV', async () => {
    await page.goto(`${base}/`);
    await reloadUntilVisible('gpt-e2e', '[data-testid="activity"]');
    // The call's receipt: the request id its answer carried, and the credits it was told it cost.
    await page.getByRole('button', { name: /^Show the receipt of the gpt-e2e call/ }).click();
    const receipt = page.getByTestId('receipt');
    await receipt.getByText(callId).waitFor();
    await receipt.getByText(`${callCost.toLocaleString('en-US')} credits from the balance`).waitFor();
    await page.locator('.legend').getByText('gpt-e2e').waitFor();
    expect(await page.locator('.chart rect').count()).toBeGreaterThan(0);
    await expectAccessible('overview');
    await screenshot(page, 'overview');

    await page.goto(`${base}/usage`);
    await page.getByTestId('usage-table').getByText('gpt-e2e').waitFor();
    await expectAccessible('usage');
    await screenshot(page, 'usage');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    const csv = await readFile((await download.path()) ?? '', 'utf8');
    expect(csv.split('\n')[0]).toBe(
      'day,alias,requests,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cache_write_1h_tokens,charged_tokens,charged_credits',
    );
    expect(csv).toMatch(/,gpt-e2e,1,\d+,\d+,0,0,0,0,\d+/);

    await page.goto(`${base}/keys`);
    const card = page.getByTestId('key-laptop');
    // Each key says when it was last used and what it used in the last 30 days.
    await card
      .getByTestId('key-usage')
      .getByText(/^1 call, [\d,]+ tokens, [\d,]+ credits$/)
      .waitFor();
    await card
      .getByTestId('key-last-used')
      .getByText(/^about /)
      .waitFor();
    await card.getByRole('button', { name: 'Activity' }).click();
    await card.getByTestId('activity').getByText('gpt-e2e').waitFor();
    await card.getByRole('button', { name: 'Validate' }).click();
    await card
      .getByTestId('key-status')
      .getByText(/Valid: active/)
      .waitFor();
  });

  it('copies the key again, and shows the throttle once it is reached', async () => {
    await page.goto(`${base}/keys`);
    const card = page.getByTestId('key-laptop');
    await card.getByRole('button', { name: 'Copy key' }).click();
    const shown = page.getByTestId('secret-value');
    expect(await shown.textContent()).toBe(secret);
    await page.getByRole('button', { name: 'Hide' }).click();
    await shown.waitFor({ state: 'detached' });

    // Use up the rest of the reveal allowance through the API, as another tab would.
    await page.evaluate(
      async (keyId) => {
        const csrf = /(?:^|; )tollgate_csrf=([^;]+)/.exec(document.cookie)?.[1] ?? '';
        for (let attempt = 0; attempt < 20; attempt += 1) {
          const response = await fetch(`/api/v1/me/api-keys/${keyId}/reveal`, {
            method: 'POST',
            headers: { 'x-csrf-token': decodeURIComponent(csrf) },
          });
          if (response.status === 429) return;
        }
      },
      await keyIdOf('laptop'),
    );
    await card.getByRole('button', { name: 'Copy key' }).click();
    await card.getByText(/Copy key is limited to protect your keys. Try again in \d+ seconds/).waitFor();
    await expectAccessible('keys (throttled)');
  });

  it('rotates the key behind a confirmation: the old secret stops, the new one works', async () => {
    await page.goto(`${base}/keys`);
    const card = page.getByTestId('key-laptop');
    await card.getByRole('button', { name: 'Rotate' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('the current one stops working at once').waitFor();
    await expectAccessible('rotate confirmation');
    await dialog.getByRole('button', { name: 'Rotate key' }).click();
    const rotated = (await page.getByTestId('secret-value').textContent()) ?? '';
    expect(rotated).toMatch(/^sk-tg-/);
    expect(rotated).not.toBe(secret);
    await page.getByRole('button', { name: 'Hide' }).click();

    await expectOpenAIError(
      openaiClient(stack.gatewayUrl, secret).chat.completions.create(chatRequest('gpt-e2e')),
      OpenAI.AuthenticationError,
      401,
      'invalid_api_key',
    );
    await openaiClient(stack.gatewayUrl, rotated).chat.completions.create(chatRequest('gpt-e2e'));
    secret = rotated;
  });

  it('disables, enables and finally revokes the key behind a confirmation', async () => {
    const card = page.getByTestId('key-laptop');
    await card.getByRole('button', { name: 'Disable' }).click();
    await card.getByText('disabled', { exact: true }).waitFor();
    // Validate says what the badge says: a disabled key is not usable; once enabled, it is.
    await card.getByRole('button', { name: 'Validate' }).click();
    await card
      .getByTestId('key-status')
      .getByText(/Not usable: this key is disabled/)
      .waitFor();
    await card.getByRole('button', { name: 'Enable' }).click();
    await card.getByText('active', { exact: true }).waitFor();
    await card.getByTestId('key-status').waitFor({ state: 'detached' });
    await card.getByRole('button', { name: 'Validate' }).click();
    await card
      .getByTestId('key-status')
      .getByText(/Valid: active/)
      .waitFor();

    await card.getByRole('button', { name: 'Revoke' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await card.getByText('active', { exact: true }).waitFor();
    await card.getByRole('button', { name: 'Revoke' }).click();
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    // A revoked key is folded away below the usable ones.
    await page.getByText('Revoked and expired keys (1)').click();
    await card.getByText('revoked', { exact: true }).waitFor();
    await expectOpenAIError(
      openaiClient(stack.gatewayUrl, secret).chat.completions.create(chatRequest('gpt-e2e')),
      OpenAI.PermissionDeniedError,
      403,
      'api_key_revoked',
    );
  });

  it('shows the "use a key" panel with base URLs and snippets', async () => {
    await page.goto(`${base}/use-key`);
    await page.getByTestId('openai-base').getByText('/v1').waitFor();
    await page.getByRole('tab', { name: 'Claude Code' }).click();
    await page.getByText('ANTHROPIC_BASE_URL').waitFor();
    await page.keyboard.press('ArrowRight');
    await page.getByText('model_providers.tollgate').waitFor();
    await expectAccessible('use a key');
    await screenshot(page, 'use-key');
  });

  it('fits a 375 px wide window on every main screen', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    for (const path of ['/', '/keys', '/usage', '/use-key', '/sessions', '/profile', '/models', '/status']) {
      await page.goto(`${base}${path}`);
      await page.locator('main h1').waitFor();
      await page.waitForLoadState('networkidle');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `horizontal overflow on ${path}`).toBeLessThanOrEqual(0);
    }
    await page.goto(`${base}/`);
    await page.getByTestId('activity').waitFor();
    await screenshot(page, 'overview-narrow');

    // axe at 390 px (a phone): wide tables scroll inside a labelled, keyboard-reachable region.
    await page.setViewportSize({ width: 390, height: 844 });
    for (const path of ['/', '/keys', '/usage', '/orders', '/buy', '/sessions', '/profile', '/models']) {
      await page.goto(`${base}${path}`);
      await page.locator('main h1').waitFor();
      await page.waitForLoadState('networkidle');
      expect(await accessibilityViolations(page), `axe on ${path} at 390 px`).toEqual([]);
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  });
});

async function keyIdOf(name: string): Promise<string> {
  const { rows } = await stack.db.query<{ id: string }>('select id from api_keys where name = $1', [name]);
  if (!rows[0]) throw new Error(`no key named ${name}`);
  return rows[0].id;
}
