import { AppError } from '@tollgate/errors';
import type { Dependencies } from '../../deps.ts';
import {
  type Account,
  findCredentialsByEmail,
  findPasswordHash,
  normalizeEmail,
} from '../accounts/accounts.service.ts';
import {
  hitThrottle,
  refundThrottle,
  resetThrottle,
  throttledError,
  throttleKey,
} from '../throttle/throttle.service.ts';
import { hasSignedInFrom } from './auth.repository.ts';
import { replacePassword } from './password-reset.service.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import {
  type Authenticated,
  endAccountSessions,
  type StartedSession,
  startSession,
} from './sessions.service.ts';
import { requireSecondFactor } from './two-factor.service.ts';

export interface ClientMeta {
  /** Client address (from a trusted proxy's header only when configured). */
  ip: string;
  userAgent: string | null;
}

type LoginDeps = Pick<Dependencies, 'db' | 'clock' | 'config'>;

const WRONG_CREDENTIALS = 'Email or password is incorrect.';

/**
 * Signs in. Three throttles: per address (every attempt), per account and address (every attempt,
 * cleared by a success), per account from anywhere (failures: a success gives its slot back). Each
 * slot is taken before the password is checked. The per-account one never locks the owner out: an
 * address that signed in to the account before may still sign in with the right password. Unknown
 * emails run the same steps (a dummy hash is verified) so they answer alike and in like time.
 */
export async function logIn(
  deps: LoginDeps,
  input: { email: string; password: string; twoFactorCode?: string | undefined },
  client: ClientMeta,
): Promise<{ account: Account; started: StartedSession }> {
  const { db, clock, config } = deps;
  const rules = config.throttles;
  const email = normalizeEmail(input.email);
  const now = clock.now();
  const addressKey = throttleKey('login-address', client.ip);
  const pairKey = throttleKey('login-pair', email, client.ip);
  const accountKey = throttleKey('login-account', email);

  // Every slot is taken before the password is checked: the count is one atomic statement, so
  // concurrent attempts beyond the limit are refused without reaching the password check.
  const byAddress = await hitThrottle(db, addressKey, rules.loginPerAddress, now);
  if (!byAddress.allowed) throw throttledError(byAddress);
  const byPair = await hitThrottle(db, pairKey, rules.loginPerAccountAddress, now);
  if (!byPair.allowed) throw throttledError(byPair);
  const byAccount = await hitThrottle(db, accountKey, rules.loginPerAccount, now);

  const credentials = await findCredentialsByEmail(db, email);
  if (
    !byAccount.allowed &&
    !(credentials && (await hasSignedInFrom(db, credentials.account.id, client.ip)))
  ) {
    throw throttledError(byAccount);
  }
  const matches = await verifyPassword(credentials?.passwordHash ?? null, input.password);
  if (!credentials || !matches) {
    throw new AppError('unauthenticated', { message: WRONG_CREDENTIALS });
  }
  // The per-account rule counts failures only: a success gives its slot back.
  if (byAccount.allowed) await refundThrottle(db, accountKey, byAccount);
  await resetThrottle(db, pairKey);
  if (credentials.account.status === 'suspended') throw new AppError('account_suspended');
  const actor = { accountId: credentials.account.id, ip: client.ip, userAgent: client.userAgent };
  await requireSecondFactor(deps, actor, input.twoFactorCode);
  const started = await startSession(deps, credentials.account.id, client);
  return { account: credentials.account, started };
}

/** Changes the password of a signed-in account and ends its other sessions. */
export async function changePassword(
  deps: LoginDeps,
  auth: Authenticated,
  input: { currentPassword: string; newPassword: string },
  client: ClientMeta,
): Promise<{ endedSessions: number }> {
  const { db, clock, config } = deps;
  const key = throttleKey('password-change', auth.account.id, client.ip);
  const verdict = await hitThrottle(db, key, config.throttles.loginPerAccountAddress, clock.now());
  if (!verdict.allowed) throw throttledError(verdict);
  const storedHash = await findPasswordHash(db, auth.account.id);
  if (!(await verifyPassword(storedHash, input.currentPassword))) {
    throw AppError.validation({ currentPassword: ['The current password is incorrect.'] });
  }
  await resetThrottle(db, key);
  const passwordHash = await hashPassword(input.newPassword);
  await deps.db
    .transaction()
    .execute((trx) => replacePassword({ db: trx, clock }, auth.account, passwordHash));
  const endedSessions = await endAccountSessions(deps, auth.account.id, 'password_changed', auth.session.id);
  return { endedSessions };
}
