import { timingSafeEqual } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import type { Dependencies } from '../../deps.ts';
import {
  type Account,
  createAccount,
  findAccountByEmail,
  normalizeEmail,
} from '../accounts/accounts.service.ts';
import type { Mailer } from '../mail/mail.service.ts';
import { enforceThrottle, throttleKey } from '../throttle/throttle.service.ts';
import {
  consumeEmailCode,
  countCodeAttempt,
  insertEmailCode,
  selectLatestCodeForUpdate,
  voidEmailCodes,
} from './auth.repository.ts';
import { hashEmailCode, newRegisterCode } from './email-codes.ts';
import { hashPassword } from './passwords.ts';

type RegistrationDeps = Pick<Dependencies, 'db' | 'clock' | 'config'>;

const WRONG_CODE = 'The code is wrong or has expired. Ask for a new one.';
const UNIQUE_VIOLATION = '23505';

/** Per-address and per-recipient limits on outgoing account emails. */
export async function enforceEmailThrottles(
  deps: RegistrationDeps,
  kind: string,
  email: string,
  ip: string,
): Promise<void> {
  const now = deps.clock.now();
  await enforceThrottle(
    deps.db,
    throttleKey(`${kind}-address`, ip),
    deps.config.throttles.emailPerAddress,
    now,
  );
  await enforceThrottle(
    deps.db,
    throttleKey(`${kind}-recipient`, email),
    deps.config.throttles.emailPerRecipient,
    now,
  );
}

/**
 * Sends a sign-up code. An address that already has an account gets a notice instead of a code,
 * so the answer is the same either way and only the mailbox owner learns the difference.
 */
export async function requestRegisterCode(
  deps: RegistrationDeps,
  mailer: Mailer,
  input: { email: string },
  ip: string,
): Promise<{ expiresInSeconds: number }> {
  const email = normalizeEmail(input.email);
  await enforceEmailThrottles(deps, 'register-code', email, ip);
  const ttlMs = deps.config.emailCodes.registerTtlMs;
  const minutes = Math.round(ttlMs / 60_000);
  if (await findAccountByEmail(deps.db, email)) {
    await mailer.send({
      to: email,
      kind: 'register_existing',
      subject: 'Your Tollgate account',
      text:
        'Someone asked to create a Tollgate account with this address, which already has one. ' +
        'Sign in, or reset your password if you forgot it. If this was not you, ignore this email.',
    });
    return { expiresInSeconds: ttlMs / 1000 };
  }
  const code = newRegisterCode();
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    await voidEmailCodes(trx, 'register', email, now);
    await insertEmailCode(trx, {
      purpose: 'register',
      email,
      codeHash: hashEmailCode(deps.config.keyPepper, 'register', email, code),
      expiresAt: new Date(now.getTime() + ttlMs),
    });
  });
  await mailer.send({
    to: email,
    kind: 'register_code',
    subject: 'Your Tollgate sign-up code',
    text: `Your sign-up code is ${code}. It expires in ${minutes} minutes and works once.`,
  });
  return { expiresInSeconds: ttlMs / 1000 };
}

/**
 * Consumes the code and creates the account. A wrong code counts against that code (it dies
 * after the configured attempts) and against the caller's address.
 */
export async function register(
  deps: RegistrationDeps,
  input: { email: string; code: string; password: string; displayName?: string | null },
  ip: string,
): Promise<Account> {
  const email = normalizeEmail(input.email);
  const { db, clock, config } = deps;
  await enforceThrottle(db, throttleKey('code-check', ip), config.throttles.codeCheckPerAddress, clock.now());
  const passwordHash = await hashPassword(input.password);
  const presented = hashEmailCode(config.keyPepper, 'register', email, input.code);
  const outcome = await db.transaction().execute(async (trx) => {
    const now = clock.now();
    const row = await selectLatestCodeForUpdate(trx, 'register', email, now);
    if (!row || row.attempts >= config.emailCodes.registerMaxAttempts) return null;
    if (!timingSafeEqual(row.code_hash, presented)) {
      await countCodeAttempt(trx, row.id);
      return null;
    }
    await consumeEmailCode(trx, row.id, now);
    try {
      return await createAccount(trx, { email, passwordHash, displayName: input.displayName ?? null });
    } catch (error) {
      // Someone registered the address between code and now: same answer as a wrong code.
      if ((error as { code?: string }).code === UNIQUE_VIOLATION) return 'taken' as const;
      throw error;
    }
  });
  if (outcome === null || outcome === 'taken') throw AppError.validation({ code: [WRONG_CODE] });
  return outcome;
}
