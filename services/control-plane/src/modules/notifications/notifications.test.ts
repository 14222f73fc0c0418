import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, latestEmailText } from '../../../test/client.ts';
import { commerceEnv, type Shopper, seedCommerceCatalog, shopper } from '../../../test/commerce.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { changeCredit } from '../billing/billing.service.ts';
import { sendBillingNotices } from './notifications.service.ts';

let context: TestContext;
const password = 'a long enough password';

beforeAll(async () => {
  context = await createTestContext('notifications', { ...commerceEnv(), LOW_BALANCE_EMAIL_CREDITS: '1000' });
  await seedCommerceCatalog(context);
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

async function emailsTo(email: string, kind: string): Promise<number> {
  const rows = await context.deps.db
    .selectFrom('outbox_emails')
    .select('id')
    .where('recipient', '=', email)
    .where('kind', '=', kind)
    .execute();
  return rows.length;
}

/** Two control planes' passes at once, then another: each notice must still go out once. */
async function runPasses(): Promise<void> {
  const mailer = context.publicApp.mailer;
  await Promise.all([sendBillingNotices(context.deps, mailer), sendBillingNotices(context.deps, mailer)]);
  await sendBillingNotices(context.deps, mailer);
}

async function pay(buyer: Shopper, id: string): Promise<void> {
  expect((await buyer.client.request('POST', `/orders/${id}/payment`)).status).toBe(200);
  const paid = await buyer.client.request('POST', `/orders/${id}/payment/verify`);
  expect(paid.body.data.status).toBe('paid');
}

async function buy(buyer: Shopper): Promise<string> {
  const created = await buyer.client.request('POST', '/orders', { body: { packageId: 'usd' } });
  expect(created.status).toBe(201);
  await pay(buyer, created.body.data.id);
  return created.body.data.id;
}

async function setCredit(accountId: string, amount: bigint): Promise<void> {
  await changeCredit(context.deps, { accountId, amount, kind: 'adjustment', cause: 'test' });
}

describe('billing emails', () => {
  it('mails a receipt of each paid order once, with its link; not to a customer who turned them off', async () => {
    const buyer = await shopper(context);
    const orderId = await buy(buyer);
    await runPasses();
    expect(await emailsTo(buyer.email, 'purchase')).toBe(1);
    const text = await latestEmailText(context, buyer.email, 'purchase');
    expect(text).toContain('USD pack: 1,000 tokens for USD 19.99');
    expect(text).toContain(`http://127.0.0.1:${context.deps.config.port}/orders/${orderId}`);

    // A top-up buys credits.
    const topUp = await buyer.client.request('POST', '/top-ups', {
      body: { amount: '1234', provider: 'development' },
    });
    expect(topUp.status).toBe(201);
    await pay(buyer, topUp.body.data.id);
    await runPasses();
    expect(await emailsTo(buyer.email, 'purchase')).toBe(2);
    expect(await latestEmailText(context, buyer.email, 'purchase')).toMatch(
      /^Thank you for your purchase of a credit top-up: [\d,]+ credits for USD 12\.34\./,
    );

    const settings = await buyer.client.request('PATCH', '/me/email-settings', {
      body: { purchaseEmails: false },
    });
    expect(settings.status).toBe(200);
    expect(settings.body.data).toEqual({
      securityEmails: true,
      purchaseEmails: false,
      lowBalanceEmails: true,
    });
    await buy(buyer);
    await runPasses();
    expect(await emailsTo(buyer.email, 'purchase')).toBe(2);
  });

  it('mails a low balance once per fall below the threshold; again only after it was back above', async () => {
    const customer = await shopper(context);
    await setCredit(customer.accountId, 5000n);
    await runPasses();
    await setCredit(customer.accountId, -4500n);
    await runPasses();
    expect(await emailsTo(customer.email, 'low_balance')).toBe(1);
    expect(await latestEmailText(context, customer.email, 'low_balance')).toContain(
      'Your credit balance is 500 credits, below 1,000.',
    );
    await setCredit(customer.accountId, -100n);
    await runPasses();
    expect(await emailsTo(customer.email, 'low_balance')).toBe(1);

    await setCredit(customer.accountId, 2000n);
    await runPasses();
    await setCredit(customer.accountId, -2000n);
    await runPasses();
    expect(await emailsTo(customer.email, 'low_balance')).toBe(2);
  });

  it('never mails a low balance to a customer who turned it off, nor to one never above the threshold', async () => {
    const quiet = await shopper(context);
    const off = await quiet.client.request('PATCH', '/me/email-settings', {
      body: { lowBalanceEmails: false },
    });
    expect(off.body.data.lowBalanceEmails).toBe(false);
    await setCredit(quiet.accountId, 5000n);
    await runPasses();
    await setCredit(quiet.accountId, -4500n);
    await runPasses();
    expect(await emailsTo(quiet.email, 'low_balance')).toBe(0);

    const empty = await shopper(context);
    await runPasses();
    expect(await emailsTo(empty.email, 'low_balance')).toBe(0);
    expect((await empty.client.request('GET', '/me/email-settings')).body.data).toEqual({
      securityEmails: true,
      purchaseEmails: true,
      lowBalanceEmails: true,
    });
    // Security emails cannot be turned off.
    const refused = await empty.client.request('PATCH', '/me/email-settings', {
      body: { securityEmails: false },
    });
    expect(refused.status).toBe(422);
  });
});

describe('security emails', () => {
  it('mails a password change once, and a reset password once; they cannot be turned off', async () => {
    const customer = await shopper(context);
    await customer.client.request('PATCH', '/me/email-settings', {
      body: { purchaseEmails: false, lowBalanceEmails: false },
    });
    const changed = await customer.client.request('POST', '/me/password', {
      body: { currentPassword: password, newPassword: 'another long password' },
    });
    expect(changed.status).toBe(200);
    await context.publicApp.mailer.drain();
    expect(await emailsTo(customer.email, 'password_changed')).toBe(1);
    expect(await latestEmailText(context, customer.email, 'password_changed')).toContain(
      'The password of your account was changed.',
    );

    const visitor = createClient(context);
    await visitor.request('POST', '/auth/forgot-password', { body: { email: customer.email } });
    const token = /#token=([A-Za-z0-9_-]+)/.exec(
      await latestEmailText(context, customer.email, 'password_reset'),
    )?.[1];
    expect(token).toBeTruthy();
    const reset = await visitor.request('POST', '/auth/reset-password', {
      body: { token, password: 'a third long password' },
    });
    expect(reset.status).toBe(200);
    expect(await emailsTo(customer.email, 'password_changed')).toBe(2);
  });
});
