import { randomBytes } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import { Secret, TOTP } from 'otpauth';
import { renderSVG } from 'uqr';
import type { Dependencies } from '../../deps.ts';
import { findPasswordHash } from '../accounts/accounts.service.ts';
import { decryptSecret, encryptSecret, lookupHashOf } from '../api-keys/key-crypto.ts';
import { type Actor, recordAudit, recordServiceAudit } from '../audit/audit.service.ts';
import { hitThrottle, resetThrottle, throttledError, throttleKey } from '../throttle/throttle.service.ts';
import { verifyPassword } from './passwords.ts';
import {
  countUnusedRecoveryCodes,
  deleteTwoFactor,
  markConfirmed,
  replaceRecoveryCodes,
  selectTwoFactor,
  spendRecoveryCode,
  takeStep,
  upsertPendingSecret,
} from './two-factor.repository.ts';

type TwoFactorDeps = Pick<Dependencies, 'db' | 'clock' | 'config'>;

const ISSUER = 'Tollgate';
const RECOVERY_CODES = 10;
/** A code of the step before or after now is accepted too: phone clocks drift. */
const WINDOW = 1;
const CODE_FIELD = 'twoFactorCode';

export const NEED_CODE = 'Enter the 6-digit code from your authenticator app, or a recovery code.';
const WRONG_CODE = 'This code is not right, or was already used.';

/** The AES-GCM additional data: a secret copied onto another account's row does not decrypt. */
const aadOf = (accountId: string) => `totp:${accountId}`;

function totpOf(secret: Secret, label: string): TOTP {
  return new TOTP({ issuer: ISSUER, label, algorithm: 'SHA1', digits: 6, period: 30, secret });
}

export async function twoFactorStatus(deps: TwoFactorDeps, accountId: string) {
  const row = await selectTwoFactor(deps.db, accountId);
  const enabled = Boolean(row?.confirmed_at);
  return {
    enabled,
    enabledAt: row?.confirmed_at?.toISOString() ?? null,
    recoveryCodesLeft: enabled ? await countUnusedRecoveryCodes(deps.db, accountId) : 0,
  };
}

/**
 * Counts an attempt against the account, under the login throttle's per-account-and-address
 * rule; a success clears the count.
 */
async function countAttempt(deps: TwoFactorDeps, name: string, accountId: string) {
  const key = throttleKey(name, accountId);
  const verdict = await hitThrottle(
    deps.db,
    key,
    deps.config.throttles.loginPerAccountAddress,
    deps.clock.now(),
  );
  if (!verdict.allowed) throw throttledError(verdict);
  return key;
}

async function requirePassword(deps: TwoFactorDeps, accountId: string, password: string): Promise<void> {
  const key = await countAttempt(deps, 'two-factor-password', accountId);
  if (!(await verifyPassword(await findPasswordHash(deps.db, accountId), password))) {
    throw AppError.validation({ password: ['The password is incorrect.'] });
  }
  await resetThrottle(deps.db, key);
}

/**
 * Starts (or restarts) an enrolment: a new secret, kept encrypted, returned this once as base32,
 * an otpauth:// URI and its QR code. Needs the password; refused while two-factor sign-in is on.
 */
export async function beginEnrolment(
  deps: TwoFactorDeps,
  account: { id: string; email: string },
  password: string,
) {
  await requirePassword(deps, account.id, password);
  const secret = new Secret({ size: 20 });
  const stored = encryptSecret(deps.config.keyEncryptionKey, aadOf(account.id), secret.base32);
  if (!(await upsertPendingSecret(deps.db, account.id, stored))) {
    throw new AppError('forbidden', { message: 'Two-factor sign-in is already on. Turn it off first.' });
  }
  const uri = totpOf(secret, account.email).toString();
  const svg = renderSVG(uri, { border: 2 });
  return {
    secret: secret.base32,
    otpauthUri: uri,
    qrCode: `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`,
  };
}

/** Whether `code` is the account's current TOTP code, used for the first time (takes its step). */
async function acceptTotp(deps: TwoFactorDeps, accountId: string, ciphertext: Buffer, code: string) {
  if (!/^\d{6}$/.test(code)) return false;
  const base32 = decryptSecret(deps.config.keyEncryptionKey, aadOf(accountId), ciphertext);
  const timestamp = deps.clock.now().getTime();
  const delta = totpOf(Secret.fromBase32(base32), '').validate({ token: code, timestamp, window: WINDOW });
  if (delta === null) return false;
  const step = BigInt(TOTP.counter({ timestamp }) + delta);
  return takeStep(deps.db, accountId, step);
}

const normalizeRecoveryCode = (code: string) => code.toLowerCase().replace(/[^0-9a-f]/g, '');

/** Ten single-use codes (12 hex digits each, shown in groups of four); only their keyed hashes are kept. */
function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODES }, () =>
    (randomBytes(6).toString('hex').match(/.{4}/g) ?? []).join('-'),
  );
}

/** Turns two-factor sign-in on with the first code of the pending secret; returns the recovery codes, once. */
export async function confirmEnrolment(deps: TwoFactorDeps, actor: Actor, code: string) {
  const row = await selectTwoFactor(deps.db, actor.accountId);
  if (!row || row.confirmed_at) {
    throw new AppError('forbidden', {
      message: row
        ? 'Two-factor sign-in is already on.'
        : 'Start the set-up first: no secret is waiting for a code.',
    });
  }
  const key = await countAttempt(deps, 'two-factor', actor.accountId);
  if (!(await acceptTotp(deps, actor.accountId, row.secret_ciphertext, code.trim()))) {
    throw AppError.validation({ code: [WRONG_CODE] });
  }
  await resetThrottle(deps.db, key);
  const codes = newRecoveryCodes();
  await deps.db.transaction().execute(async (trx) => {
    await markConfirmed(trx, actor.accountId, deps.clock.now());
    await replaceRecoveryCodes(
      trx,
      actor.accountId,
      codes.map((recovery) => lookupHashOf(deps.config.keyPepper, normalizeRecoveryCode(recovery))),
    );
    await recordAudit(trx, actor, {
      action: 'account.two_factor.enable',
      targetType: 'account',
      targetId: actor.accountId,
    });
  });
  return { recoveryCodes: codes };
}

/**
 * Checks a second factor of a confirmed enrolment: a TOTP code (each accepted once) or an unused
 * recovery code (spent). Throttled per account; a spent recovery code leaves an audit row.
 */
async function checkSecondFactor(
  deps: TwoFactorDeps,
  actor: Actor,
  ciphertext: Buffer,
  code: string,
  field: string,
): Promise<void> {
  const key = await countAttempt(deps, 'two-factor', actor.accountId);
  const trimmed = code.trim();
  if (await acceptTotp(deps, actor.accountId, ciphertext, trimmed)) {
    await resetThrottle(deps.db, key);
    return;
  }
  const recovery = normalizeRecoveryCode(trimmed);
  // The code is spent and its audit row written together: no spent code goes unrecorded.
  const spent =
    recovery.length === 12 &&
    (await deps.db.transaction().execute(async (trx) => {
      const hash = lookupHashOf(deps.config.keyPepper, recovery);
      if (!(await spendRecoveryCode(trx, actor.accountId, hash, deps.clock.now()))) return false;
      await recordAudit(trx, actor, {
        action: 'account.two_factor.recovery_code_used',
        targetType: 'account',
        targetId: actor.accountId,
        detail: { recoveryCodesLeft: await countUnusedRecoveryCodes(trx, actor.accountId) },
      });
      return true;
    }));
  if (!spent) throw AppError.validation({ [field]: [WRONG_CODE] });
  await resetThrottle(deps.db, key);
}

/**
 * At sign-in, after the password: nothing when two-factor sign-in is off; otherwise the code is
 * required (validation_failed on `twoFactorCode` says so, and that it was wrong).
 */
export async function requireSecondFactor(deps: TwoFactorDeps, actor: Actor, code: string | undefined) {
  const row = await selectTwoFactor(deps.db, actor.accountId);
  if (!row?.confirmed_at) return;
  if (!code?.trim()) throw AppError.validation({ [CODE_FIELD]: [NEED_CODE] }, NEED_CODE);
  await checkSecondFactor(deps, actor, row.secret_ciphertext, code, CODE_FIELD);
}

/** Turns two-factor sign-in off: needs the password and a code (or a recovery code). */
export async function disableTwoFactor(
  deps: TwoFactorDeps,
  actor: Actor,
  input: { password: string; code: string },
): Promise<void> {
  const row = await selectTwoFactor(deps.db, actor.accountId);
  if (!row?.confirmed_at) throw new AppError('forbidden', { message: 'Two-factor sign-in is not on.' });
  await requirePassword(deps, actor.accountId, input.password);
  await checkSecondFactor(deps, actor, row.secret_ciphertext, input.code, 'code');
  await deps.db.transaction().execute(async (trx) => {
    await deleteTwoFactor(trx, actor.accountId);
    await recordAudit(trx, actor, {
      action: 'account.two_factor.disable',
      targetType: 'account',
      targetId: actor.accountId,
    });
  });
}

/**
 * The operator's way back in for an owner who lost both the phone and the recovery codes
 * (`tollgate-admin reset-two-factor`): two-factor sign-in off, with the reason in the audit log.
 */
export async function resetTwoFactor(
  deps: Pick<Dependencies, 'db'>,
  accountId: string,
  reason: string,
): Promise<{ wasOn: boolean }> {
  return deps.db.transaction().execute(async (trx) => {
    const row = await selectTwoFactor(trx, accountId);
    await deleteTwoFactor(trx, accountId);
    await recordServiceAudit(trx, {
      action: 'account.two_factor.reset',
      targetType: 'account',
      targetId: accountId,
      detail: { reason, wasOn: Boolean(row?.confirmed_at) },
    });
    return { wasOn: Boolean(row?.confirmed_at) };
  });
}
