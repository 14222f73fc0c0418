/**
 * The account screens in Chromium against the real services: sessions (another browser signed out
 * with "End all other sessions"), profile and password errors beside their fields, logging out,
 * and resetting a forgotten password with the emailed token. Every screen passes axe.
 */
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessibilityViolations, ensureDashboardBuilt, launchChromium, screenshot } from '../src/browser.ts';
import { closeCheckingLedger } from '../src/ledger.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

let stack: E2EStack;
let browser: Browser;
let page: Page;
let base: string;
const email = `account-${randomBytes(5).toString('hex')}@example.test`;
const password = `correct horse ${randomBytes(5).toString('hex')}`;

beforeAll(async () => {
  await ensureDashboardBuilt();
  stack = await startStack('dashboard-account');
  base = stack.controlPlaneUrl;
  await stack.admin('create-account', email, '--password', password);
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${base}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: /Welcome/ }).waitFor();
});

afterAll(async () => {
  await browser?.close();
  if (stack) await closeCheckingLedger(stack);
});

async function expectAccessible(screen: string): Promise<void> {
  expect(await accessibilityViolations(page), `axe on ${screen}`).toEqual([]);
}

describe('the account screens in Chromium', () => {
  it('lists sessions and ends every other one; shows password errors beside their fields', async () => {
    // A second browser signs in; "End all other sessions" signs it out and keeps this one.
    const other = await browser.newContext();
    const otherPage = await other.newPage();
    await otherPage.goto(`${base}/login`);
    await otherPage.getByLabel('Email').fill(email);
    await otherPage.getByLabel('Password').fill(password);
    await otherPage.getByRole('button', { name: 'Log in' }).click();
    await otherPage.getByRole('heading', { name: /Welcome/ }).waitFor();
    await page.goto(`${base}/sessions`);
    await page.getByText('this browser').waitFor();
    expect(await page.locator('.sessions > li').count()).toBe(2);
    await expectAccessible('sessions');
    await screenshot(page, 'sessions');
    await page.getByRole('button', { name: 'End all other sessions' }).click();
    await page.getByText('This is your only signed-in browser.').waitFor();
    expect(await page.locator('.sessions > li').count()).toBe(1);
    await otherPage.goto(`${base}/keys`);
    await otherPage.getByRole('heading', { name: 'Log in' }).waitFor();
    await other.close();

    await page.goto(`${base}/profile`);
    await page.getByLabel('Current password').fill('not the password');
    await page.getByLabel('New password').fill('short');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.locator('.field-error').first().waitFor();
    await expectAccessible('profile with errors');
  });

  it('returns to the login screen after logging out', async () => {
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    await page.goto(`${base}/keys`);
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    expect(page.url()).toContain('/login?next=%2Fkeys');
    await expectAccessible('log in');
    await screenshot(page, 'login');
  });

  it('resets a forgotten password with the emailed token', async () => {
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Send reset token' }).click();
    await page.getByText('we sent it a reset token').waitFor();
    await expectAccessible('forgot password');
    const { rows } = await stack.db.query<{ body_text: string }>(
      `select body_text from outbox_emails where recipient = $1 and kind = 'password_reset'
       order by created_at desc limit 1`,
      [email],
    );
    // The email carries a link to the dashboard (no bare token to paste), with the token in the
    // fragment: opening it fills the form.
    const link = /^(http\S+\/reset-password#token=([0-9a-f]{64}))$/m.exec(rows[0]?.body_text ?? '');
    expect(link?.[1]?.startsWith(`${base}/`)).toBe(true);
    const token = link?.[2] ?? '';
    await page.goto(link?.[1] ?? '');
    expect(await page.getByLabel('Reset token').inputValue()).toBe(token);
    await page.getByLabel('New password').fill('short');
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.locator('.field-error').first().waitFor();
    await expectAccessible('reset password with errors');
    const renewed = `${password} renewed`;
    await page.getByLabel('New password').fill(renewed);
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.getByText('Your password is changed').waitFor();
    expect(page.url()).not.toContain(token);

    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('alert').waitFor();
    await page.getByLabel('Password').fill(renewed);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
  });
});
