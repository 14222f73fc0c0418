import { AppError } from '@tollgate/errors';
import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
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
 * attempt, refused ones included, leaves an audit row (who, when, which key, from where), written
 * in the transaction that counts the attempt: no secret leaves without its row committed.
 */
export async function revealKey(
  deps: Pick<Dependencies, 'db' | 'clock' | 'config'>,
  caller: RevealCaller,
  keyId: string,
): Promise<{ keyId: string; secret: string }> {
  const attempt = await deps.db.transaction().execute(async (trx) => {
    const tried = await tryReveal({ ...deps, db: trx }, caller, keyId);
    await recordAudit(
      trx,
      { accountId: caller.accountId, ip: caller.ip, userAgent: caller.userAgent },
      {
        action: 'api_key.reveal',
        targetType: 'api_key',
        ...(isUuid(keyId) ? { targetId: keyId } : {}),
        detail: { outcome: tried.outcome, sessionId: caller.sessionId },
      },
    );
    return tried;
  });
  // A refusal is thrown once its audit row has committed.
  if (attempt.outcome !== 'revealed') throw attempt.error;
  return { keyId: attempt.keyId, secret: attempt.secret };
}

type Attempt =
  | { outcome: 'revealed'; keyId: string; secret: string }
  | { outcome: Exclude<RevealOutcome, 'revealed'>; error: AppError };

async function tryReveal(
  deps: Pick<Dependencies, 'clock' | 'config'> & { db: Transaction<Database> },
  caller: RevealCaller,
  keyId: string,
): Promise<Attempt> {
  const { db, clock, config } = deps;
  const verdict = await hitThrottle(
    db,
    throttleKey('key-reveal', caller.accountId),
    config.throttles.keyReveal,
    clock.now(),
  );
  if (!verdict.allowed) return { outcome: 'throttled', error: throttledError(verdict) };
  const row = isUuid(keyId) ? await selectKeyOfAccount(db, caller.accountId, keyId) : undefined;
  if (!row) return { outcome: 'not_found', error: new AppError('not_found') };
  if (row.status === 'revoked') {
    return {
      outcome: 'revoked',
      error: new AppError('forbidden', { message: 'A revoked key cannot be copied.' }),
    };
  }
  if (!row.secret_ciphertext) {
    return {
      outcome: 'not_revealable',
      error: new AppError('forbidden', {
        message:
          'This key was created before keys could be copied again. Rotate it once to get a copyable secret.',
      }),
    };
  }
  try {
    return {
      outcome: 'revealed',
      keyId: row.id,
      secret: decryptSecret(config.keyEncryptionKey, row.id, row.secret_ciphertext),
    };
  } catch (error) {
    // KEY_ENCRYPTION_KEY changed or the row was altered: an operator problem, still audited.
    return { outcome: 'failed', error: new AppError('server_error', { cause: error }) };
  }
}
