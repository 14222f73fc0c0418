import { AppError } from '@tollgate/errors';
import type { Dependencies } from '../../deps.ts';
import { isUuid } from '../accounts/accounts.service.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { hitThrottle, throttledError, throttleKey } from '../throttle/throttle.service.ts';
import { selectKeyOfAccount } from './api-keys.repository.ts';
import { decryptSecret } from './key-crypto.ts';

export interface RevealCaller {
  accountId: string;
  sessionId: string;
  ip: string;
  userAgent: string | null;
}

export type RevealOutcome = 'revealed' | 'throttled' | 'not_found' | 'revoked' | 'not_revealable' | 'failed';

/**
 * Copy key: the current secret of one of the caller's keys. Throttled per account; every
 * attempt, refused ones included, leaves an audit row (who, when, which key, from where).
 */
export async function revealKey(
  deps: Pick<Dependencies, 'db' | 'clock' | 'config'>,
  caller: RevealCaller,
  keyId: string,
): Promise<{ keyId: string; secret: string }> {
  const { db, clock, config } = deps;
  const audit = (outcome: RevealOutcome) =>
    recordAudit(
      db,
      { accountId: caller.accountId, ip: caller.ip, userAgent: caller.userAgent },
      {
        action: 'api_key.reveal',
        targetType: 'api_key',
        ...(isUuid(keyId) ? { targetId: keyId } : {}),
        detail: { outcome, sessionId: caller.sessionId },
      },
    );

  const verdict = await hitThrottle(
    db,
    throttleKey('key-reveal', caller.accountId),
    config.throttles.keyReveal,
    clock.now(),
  );
  if (!verdict.allowed) {
    await audit('throttled');
    throw throttledError(verdict);
  }
  const row = isUuid(keyId) ? await selectKeyOfAccount(db, caller.accountId, keyId) : undefined;
  if (!row) {
    await audit('not_found');
    throw new AppError('not_found');
  }
  if (row.status === 'revoked') {
    await audit('revoked');
    throw new AppError('forbidden', { message: 'A revoked key cannot be copied.' });
  }
  if (!row.secret_ciphertext) {
    await audit('not_revealable');
    throw new AppError('forbidden', {
      message:
        'This key was created before keys could be copied again. Rotate it once to get a copyable secret.',
    });
  }
  let secret: string;
  try {
    secret = decryptSecret(config.keyEncryptionKey, row.id, row.secret_ciphertext);
  } catch (error) {
    // KEY_ENCRYPTION_KEY changed or the row was altered: an operator problem, still audited.
    await audit('failed');
    throw new AppError('server_error', { cause: error });
  }
  await audit('revealed');
  return { keyId: row.id, secret };
}
