/**
 * Two-factor sign-in in Chromium against the real services: set up from the profile (QR code,
 * key, a first code, recovery codes shown once), sign-in asking for the code, a recovery code
 * working once, turning it off; and the role guard keeping a customer out of the admin screens.
 * Every screen passes axe at 1280 and 390 px.
 */
import { randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessibilityViolations, ensureDashboardBuilt, launchChromium, screenshot } from '../src/browser.ts';
import { closeCheckingLedger } from '../src/ledger.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

let stack: E2EStack;
let browser: Browser;
let page: Page;
let base: string;
const email = `two-factor-${randomBytes(5).toString('hex')}@example.test`;
const password = `correct horse ${randomBytes(5).toString('hex')}`;
let secret = '';
let recoveryCodes: string[] = [];
/** The 30-second step of the last code this test sent: each code is accepted once. */
let lastStep = -1;

beforeAll(async () => {
  await ensureDashboardBuilt();
  stack = await startStack('dashboard-two-factor');
  base = stack.controlPlaneUrl;
  await stack.admin('create-account', email, '--password', password);
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
});

afterAll(async () => {
  await browser?.close();
  if (stack) await closeCheckingLedger(stack);
});

async function expectAccessible(screen: string): Promise<void> {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 860 });
    expect(await accessibilityViolations(page), `axe on ${screen} at ${width} px`).toEqual([]);
  }
  await page.setViewportSize({ width: 1280, height: 860 });
}

/** The authenticator app's code now, in a 30-second step no code was sent in yet. */
async function freshCode(): Promise<string> {
  const step = Math.floor(Date.now() / 30_000);
  if (step <= lastStep) {
    // The app shows a new code only in the next step; wait for it (at most 30 s).
    await new Promise((resolve) => setTimeout(resolve, (lastStep + 1) * 30_000 - Date.now() + 200));
  }
  lastStep = Math.floor(Date.now() / 30_000);
  return TOTP.generate({ secret: Secret.fromBase32(secret) });
}

async function logIn(): Promise<void> {
  await page.goto(`${base}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

function twoFactorCard() {
  return page
    .locator('section.card')
    .filter({ has: page.getByRole('heading', { name: 'Two-factor sign-in' }) });
}

async function logOut(): Promise<void> {
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
}

describe('two-factor sign-in in Chromium', () => {
  it('keeps a customer out of the admin and reseller screens, saying why', async () => {
    await logIn();
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
    const refused: string[] = [];
    const record = (response: { status(): number; url(): string }) => {
      if (/\/api\/v1\/(admin|reseller)/.test(response.url()))
        refused.push(`${response.status()} ${response.url()}`);
    };
    page.on('response', record);
    await page.goto(`${base}/admin/orders`);
    await page.getByRole('heading', { name: 'Not available to this account' }).waitFor();
    await page.getByText('This page is for admins only.').waitFor();
    await page.goto(`${base}/reseller`);
    await page.getByText('This page is for resellers only.').waitFor();
    await expectAccessible('a screen of another role');
    // The guard decides before the screen asks: no refused request.
    page.off('response', record);
    expect(refused).toEqual([]);
  });

  it('sets up from the profile with a QR code, the key and a first code; shows recovery codes once', async () => {
    await page.goto(`${base}/profile`);
    const card = twoFactorCard();
    await card.getByText(/^Off\./).waitFor();
    await card.getByLabel('Password', { exact: true }).fill('not the password');
    await card.getByRole('button', { name: 'Set up two-factor sign-in' }).click();
    await card.getByText('The password is incorrect.').waitFor();
    await card.getByLabel('Password', { exact: true }).fill(password);
    await card.getByRole('button', { name: 'Set up two-factor sign-in' }).click();
    await card.getByRole('img', { name: 'QR code of the key, for an authenticator app' }).waitFor();
    secret = (await card.locator('.secret-key').textContent()) ?? '';
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    await expectAccessible('two-factor set-up');
    await screenshot(page, 'two-factor-setup');

    await card.getByLabel('Code from the app').fill('000000');
    await card.getByRole('button', { name: 'Turn on' }).click();
    await card.getByText('This code is not right, or was already used.').waitFor();
    await card.getByLabel('Code from the app').fill(await freshCode());
    await card.getByRole('button', { name: 'Turn on' }).click();
    const list = card.getByRole('list', { name: 'Recovery codes' });
    await list.waitFor();
    recoveryCodes = (await list.locator('code').allTextContents()).map((code) => code.trim());
    expect(recoveryCodes).toHaveLength(10);
    await expectAccessible('recovery codes');
    await card.getByRole('button', { name: 'I have saved them' }).click();
    await card.getByText('10 recovery codes left.').waitFor();
    // Shown once: the key is nowhere on the page any more.
    await page.reload();
    await card.getByText('10 recovery codes left.').waitFor();
    expect(await page.content()).not.toContain(secret);
  });

  it('asks for the code at sign-in; a recovery code works once', async () => {
    await logOut();
    await logIn();
    const code = page.getByLabel('Authentication code');
    await code.waitFor();
    await page.getByText('Enter the 6-digit code from your authenticator app, or a recovery code.').waitFor();
    await expectAccessible('log in asking for the code');
    await screenshot(page, 'two-factor-login');

    await code.fill(recoveryCodes[0] ?? '');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
    await logOut();

    await logIn();
    await page.getByLabel('Authentication code').fill(recoveryCodes[0] ?? '');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByText('This code is not right, or was already used.').waitFor();
    await page.getByLabel('Authentication code').fill(await freshCode());
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
  });

  it('turns billing emails off in the profile; security emails stay on', async () => {
    await page.goto(`${base}/profile`);
    const emails = page
      .locator('section.card')
      .filter({ has: page.getByRole('heading', { name: 'Emails' }) });
    const purchases = emails.getByLabel('A receipt for each purchase');
    await purchases.waitFor();
    expect(await purchases.isChecked()).toBe(true);
    await purchases.uncheck();
    await expect.poll(() => purchases.isEnabled()).toBe(true);
    await page.reload();
    await emails.getByLabel('A warning when my credit runs low').waitFor();
    expect(await emails.getByLabel('A receipt for each purchase').isChecked()).toBe(false);
    expect(await emails.getByLabel('A warning when my credit runs low').isChecked()).toBe(true);
    await emails.getByText(/Security emails .* are always sent/).waitFor();
  });

  it('turns off with the password and a code', async () => {
    await page.goto(`${base}/profile`);
    await page.getByText('9 recovery codes left.').waitFor();
    const card = twoFactorCard();
    await card.getByLabel('Password', { exact: true }).fill(password);
    await card.getByLabel('Code from the app, or a recovery code').fill(recoveryCodes[1] ?? '');
    await expectAccessible('two-factor on');
    await card.getByRole('button', { name: 'Turn off two-factor sign-in' }).click();
    await card.getByText(/^Off\./).waitFor();
    await logOut();
    await logIn();
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
  });
});
