import { randomBytes } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import type { Dependencies } from '../../deps.ts';
import {
  type Account,
  createAccount,
  findAccountByEmail,
  normalizeEmail,
  setPasswordHash,
} from '../accounts/accounts.service.ts';
import { type Actor, recordAudit } from '../audit/audit.service.ts';
import { dashboardLink } from '../mail/links.ts';
import type { Mailer } from '../mail/mail.service.ts';
import { enforceThrottle, throttleKey } from '../throttle/throttle.service.ts';
import {
  consumeEmailCode,
  insertEmailCode,
  selectUsableCodeByHashForUpdate,
  voidEmailCodes,
} from './auth.repository.ts';
import { hashEmailCode, newResetToken } from './email-codes.ts';
import { hashPassword } from './passwords.ts';
import { enforceEmailThrottles } from './registration.service.ts';
import { endAccountSessions } from './sessions.service.ts';

type ResetDeps = Pick<Dependencies, 'db' | 'clock' | 'config'>;

const TOKEN_PATTERN = /^[0-9a-f]{64}$/;
const WRONG_TOKEN = 'The reset token is wrong, used or expired. Ask for a new one.';

function resetTokenHash(pepper: string, token: string): Buffer {
  // The token alone finds its row, so the hash is not bound to an email.
  return hashEmailCode(pepper, 'password_reset', '', token);
}

/**
 * A new single-use token for POST /auth/reset-password (earlier ones of the address voided), and
 * the dashboard link that carries it in the URL fragment when PUBLIC_URL is known.
 */
async function issueResetToken(
  deps: ResetDeps,
  email: string,
  ttlMs: number,
): Promise<{ token: string; link: string }> {
  const token = newResetToken();
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    await voidEmailCodes(trx, 'password_reset', email, now);
    await insertEmailCode(trx, {
      purpose: 'password_reset',
      email,
      codeHash: resetTokenHash(deps.config.keyPepper, token),
      expiresAt: new Date(now.getTime() + ttlMs),
    });
  });
  return { token, link: dashboardLink(deps.config, `/reset-password#token=${token}`) };
}

/**
 * An account an admin opens for someone: a random password nobody knows, and an email with a
 * link to choose one (the reset token; a later "Forgot password" works the same). An address that
 * has an account already is refused, naming the field. The account and its audit row
 * (admin.account.create) commit together.
 */
export async function createAccountForSomeone(
  deps: ResetDeps,
  mailer: Mailer,
  actor: Actor,
  input: { email: string; displayName: string | null },
): Promise<Account> {
  const email = normalizeEmail(input.email);
  if (await findAccountByEmail(deps.db, email)) {
    throw AppError.validation({ email: ['An account with this email exists already.'] });
  }
  const passwordHash = await hashPassword(randomBytes(24).toString('base64url'));
  const account = await deps.db.transaction().execute(async (trx) => {
    const created = await createAccount(trx, { email, passwordHash, displayName: input.displayName });
    await recordAudit(trx, actor, {
      action: 'admin.account.create',
      targetType: 'account',
      targetId: created.id,
    });
    return created;
  });
  const ttlMs = deps.config.emailCodes.resetTtlMs;
  const { link } = await issueResetToken(deps, account.email, ttlMs);
  await mailer.send({
    to: account.email,
    kind: 'account_created',
    subject: 'Your Tollgate account',
    text:
      `An account was opened for you at Tollgate. Open this link to choose your password:\n\n${link}\n\n` +
      `It expires in ${Math.round(ttlMs / 60_000)} minutes and works once; after that, use ` +
      '"Forgot password" on the log-in screen with this address.',
  });
  return account;
}

/**
 * Emails a single-use reset token when the address has an account, and a notice that it has none
 * otherwise. Both do the same work (a token stored, one email), so neither the answer nor the time
 * it takes tells a caller whether the address is registered: the token of an address without an
 * account is stored already expired and is mailed to no one.
 */
export async function requestPasswordReset(
  deps: ResetDeps,
  mailer: Mailer,
  input: { email: string },
  ip: string,
): Promise<void> {
  const email = normalizeEmail(input.email);
  await enforceEmailThrottles(deps, 'password-reset', email, ip);
  const account = await findAccountByEmail(deps.db, email);
  const ttlMs = deps.config.emailCodes.resetTtlMs;
  const { link } = await issueResetToken(deps, account?.email ?? email, account ? ttlMs : 0);
  await mailer.send(
    account
      ? {
          to: account.email,
          kind: 'password_reset',
          subject: 'Reset your Tollgate password',
          text:
            `Open this link to choose a new password:\n\n${link}\n\n` +
            `It expires in ${Math.round(ttlMs / 60_000)} minutes and works once. ` +
            'If you did not ask for it, ignore this email: your password stays as it is.',
        }
      : {
          to: email,
          kind: 'password_reset_no_account',
          subject: 'Reset your Tollgate password',
          text:
            'Someone asked to reset the Tollgate password of this address, which has no account. ' +
            'If you have an account under another address, ask from that one. If this was not you, ' +
            'ignore this email.',
        },
  );
}

/**
 * The one way a password changes: every reset token of the account stops working with it, so a
 * token mailed before a change (made in the dashboard, say) cannot undo that change.
 */
export async function replacePassword(
  deps: Pick<Dependencies, 'db' | 'clock'>,
  account: { id: string; email: string },
  passwordHash: string,
): Promise<void> {
  await setPasswordHash(deps, account.id, passwordHash);
  await voidEmailCodes(deps.db, 'password_reset', account.email, deps.clock.now());
}

/**
 * Sets a new password from a reset token, and ends every session of the account. Returns the
 * account's address (for the security email).
 */
export async function resetPassword(
  deps: ResetDeps,
  input: { token: string; password: string },
  ip: string,
): Promise<{ email: string }> {
  const { db, clock, config } = deps;
  await enforceThrottle(db, throttleKey('code-check', ip), config.throttles.codeCheckPerAddress, clock.now());
  if (!TOKEN_PATTERN.test(input.token)) throw AppError.validation({ token: [WRONG_TOKEN] });
  const passwordHash = await hashPassword(input.password);
  const email = await db.transaction().execute(async (trx) => {
    const now = clock.now();
    const row = await selectUsableCodeByHashForUpdate(
      trx,
      'password_reset',
      resetTokenHash(config.keyPepper, input.token),
      now,
    );
    if (!row) return null;
    await consumeEmailCode(trx, row.id, now);
    const account = await findAccountByEmail(trx, row.email);
    if (!account) return null;
    await replacePassword({ db: trx, clock }, account, passwordHash);
    await endAccountSessions({ db: trx, clock, config }, account.id, 'password_reset');
    return account.email;
  });
  if (!email) throw AppError.validation({ token: [WRONG_TOKEN] });
  return { email };
}
