import type { Dependencies } from '../../deps.ts';
import { readAccountBalances } from '../billing/balances.ts';
import { dashboardLink } from '../mail/links.ts';
import type { Mailer } from '../mail/mail.service.ts';
import {
  armLowBalance,
  claimNotice,
  disarmLowBalance,
  selectEmailSettings,
  selectLowBalanceCandidates,
  selectUnannouncedPurchases,
  upsertEmailSettings,
} from './notifications.repository.ts';

type NoticeDeps = Pick<Dependencies, 'db' | 'clock' | 'config' | 'logger' | 'billing'>;

/** Purchases paid longer ago than this are never announced (a control plane down for longer, or an upgrade). */
const PURCHASE_LOOKBACK_MS = 60 * 60 * 1000;
const BATCH = 200;

export interface EmailSettings {
  /** Always true: security emails cannot be turned off (docs/emails.md). */
  securityEmails: true;
  purchaseEmails: boolean;
  lowBalanceEmails: boolean;
}

export async function emailSettingsOf(
  deps: Pick<Dependencies, 'db'>,
  accountId: string,
): Promise<EmailSettings> {
  const row = await selectEmailSettings(deps.db, accountId);
  return {
    securityEmails: true,
    purchaseEmails: row?.purchase_emails ?? true,
    lowBalanceEmails: row?.low_balance_emails ?? true,
  };
}

export async function changeEmailSettings(
  deps: Pick<Dependencies, 'db' | 'clock'>,
  accountId: string,
  change: { purchaseEmails?: boolean | undefined; lowBalanceEmails?: boolean | undefined },
): Promise<EmailSettings> {
  const current = await emailSettingsOf(deps, accountId);
  const next = {
    purchase_emails: change.purchaseEmails ?? current.purchaseEmails,
    low_balance_emails: change.lowBalanceEmails ?? current.lowBalanceEmails,
  };
  await upsertEmailSettings(deps.db, accountId, next, deps.clock.now());
  return {
    securityEmails: true,
    purchaseEmails: next.purchase_emails,
    lowBalanceEmails: next.low_balance_emails,
  };
}

/** `12345` with exponent 2 and USD: "USD 123.45". */
function money(amount: bigint, exponent: number, currency: string): string {
  const digits = amount.toString().padStart(exponent + 1, '0');
  return `${currency} ${exponent > 0 ? `${digits.slice(0, -exponent)}.${digits.slice(-exponent)}` : digits}`;
}

const grouped = (value: bigint) => value.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/**
 * What an automatic top-up charged and granted, and how to turn it off. It stands for that order's
 * purchase email (one email per order, under the same notice and opt-out), and like it is only
 * sent for an order already paid.
 */
function autoTopUpEmail(
  deps: Pick<Dependencies, 'config'>,
  order: { id: string; email: string; amount: bigint; exponent: number; currency: string; credits: bigint },
) {
  const charged = money(order.amount, order.exponent, order.currency);
  return {
    to: order.email,
    kind: 'auto_top_up',
    subject: `Automatic top-up: ${charged} charged`,
    text: [
      `Your credit balance fell below your automatic top-up threshold, so your kept card was charged ${charged} and ${grouped(order.credits)} credits were added to your balance.`,
      '',
      `The receipt: ${dashboardLink(deps.config, `/orders/${order.id}`)}`,
      '',
      `To turn automatic top-up off, or change its threshold or amount, open Buy credits: ${dashboardLink(deps.config, '/buy')}`,
      `To stop these emails, turn purchase emails off in your profile: ${dashboardLink(deps.config, '/profile')}`,
    ].join('\n'),
  };
}

/**
 * One pass of the billing emails: a receipt for each order paid since the last pass (for an
 * automatic top-up, what it charged and how to turn it off), and a
 * low-balance notice for each account whose credit fell below LOW_BALANCE_EMAIL_CREDITS since it
 * was last at or above it. Each is mailed once, however many control planes run the pass: the
 * purchase by its row in email_notices, the low balance by taking the account's armed row.
 * Opted-out customers are skipped.
 */
export async function sendBillingNotices(deps: NoticeDeps, mailer: Mailer) {
  let purchases = 0;
  let lowBalances = 0;
  const since = new Date(deps.clock.now().getTime() - PURCHASE_LOOKBACK_MS);
  for (const order of await selectUnannouncedPurchases(deps.db, since, BATCH)) {
    if (!(await claimNotice(deps.db, { kind: 'purchase', subjectId: order.id, accountId: order.account_id })))
      continue;
    if (order.auto_top_up_generation !== null) {
      await mailer.send(autoTopUpEmail(deps, { ...order, credits: order.credits + order.bonus_credits }));
      purchases += 1;
      continue;
    }
    // A top-up buys credits, a package tokens (and maybe bonus credits).
    const name =
      order.kind === 'top_up' ? 'a credit top-up' : (order.package_name ?? order.package_id ?? 'a package');
    const tokens = order.tokens + order.bonus_tokens;
    const credits = order.credits + order.bonus_credits;
    const bought = [
      ...(tokens > 0n ? [`${grouped(tokens)} tokens`] : []),
      ...(credits > 0n ? [`${grouped(credits)} credits`] : []),
    ].join(' and ');
    await mailer.send({
      to: order.email,
      kind: 'purchase',
      subject: `Your purchase of ${name}`,
      text: [
        `Thank you for your purchase of ${name}: ${bought} for ${money(order.amount, order.exponent, order.currency)}.`,
        '',
        `The receipt: ${dashboardLink(deps.config, `/orders/${order.id}`)}`,
        '',
        `To stop these emails, turn purchase emails off in your profile: ${dashboardLink(deps.config, '/profile')}`,
      ].join('\n'),
    });
    purchases += 1;
  }

  const threshold = deps.config.lowBalanceEmailCredits;
  if (threshold > 0n) {
    await armLowBalance(deps.db, threshold);
    for (const candidate of await selectLowBalanceCandidates(deps.db, threshold, BATCH)) {
      // The hot tier may hold part of the credit in a lease: what the customer can spend decides.
      const balances = await readAccountBalances(deps, candidate.account_id, { now: deps.clock.now() });
      const credits = BigInt(balances.remaining.credits);
      if (credits >= threshold || !(await disarmLowBalance(deps.db, candidate.account_id))) continue;
      await mailer.send({
        to: candidate.email,
        kind: 'low_balance',
        subject: 'Your credit balance is low',
        text: [
          `Your credit balance is ${grouped(credits)} credits, below ${grouped(threshold)}.`,
          'Calls paid from credit stop when it runs out.',
          '',
          `Buy more: ${dashboardLink(deps.config, '/buy')}`,
          '',
          `To stop these emails, turn low-balance emails off in your profile: ${dashboardLink(deps.config, '/profile')}`,
        ].join('\n'),
      });
      lowBalances += 1;
    }
  }
  return { purchases, lowBalances };
}

/** Runs sendBillingNotices every RECONCILE_INTERVAL_SECONDS until stopped; a failed pass is logged. */
export function startBillingNotices(deps: NoticeDeps, mailer: Mailer): { stop(): void } {
  const timer = setInterval(() => {
    sendBillingNotices(deps, mailer).catch((error: unknown) =>
      deps.logger.error({ err: error }, 'billing emails pass failed'),
    );
  }, deps.config.billing.reconcileIntervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/**
 * A security email: always sent (it cannot be turned off), since it is the owner's one warning
 * that someone else changed how the account is signed in to.
 */
export async function sendSecurityEmail(
  deps: Pick<Dependencies, 'config'>,
  mailer: Mailer,
  to: string,
  event: 'password_changed' | 'two_factor_enabled' | 'two_factor_disabled',
): Promise<void> {
  const what: Record<typeof event, [subject: string, text: string]> = {
    password_changed: ['Your password was changed', 'The password of your account was changed.'],
    two_factor_enabled: [
      'Two-factor sign-in is on',
      'Two-factor sign-in was turned on for your account: signing in now also asks for a code.',
    ],
    two_factor_disabled: [
      'Two-factor sign-in is off',
      'Two-factor sign-in was turned off for your account: signing in now asks for the password only.',
    ],
  };
  const [subject, text] = what[event];
  await mailer.send({
    to,
    kind: event,
    subject,
    text: [
      text,
      '',
      'If this was you, there is nothing to do.',
      `If it was not, reset your password now and check your sessions: ${dashboardLink(deps.config, '/forgot-password')}`,
    ].join('\n'),
  });
}
