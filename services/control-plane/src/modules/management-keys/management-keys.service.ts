import { AppError } from '@tollgate/errors';
import {
  apiKeyDigest,
  generateManagementKeySecret,
  isWellFormedManagementKey,
  type ManagementScope,
  maskManagementKey,
} from '@tollgate/schemas';
import type { Dependencies } from '../../deps.ts';
import { isUuid } from '../accounts/accounts.service.ts';
import { lookupHashOf } from '../api-keys/key-crypto.ts';
import { type Actor, recordAudit } from '../audit/audit.service.ts';
import { enforceThrottle, throttleKey } from '../throttle/throttle.service.ts';
import {
  countLiveKeysOfResellerLocked,
  insertManagementKey,
  type ManagementKeyRow,
  revokeKeyOfReseller,
  selectKeyForAuth,
  selectKeysOfReseller,
  touchLastUsed,
} from './management-keys.repository.ts';

type KeyDeps = Pick<Dependencies, 'db' | 'clock' | 'config'>;

/** A management key as its reseller sees it. Never carries the secret. */
export interface ManagementKey {
  id: string;
  name: string;
  mask: string;
  scopes: ManagementScope[];
  state: 'active' | 'expired' | 'revoked';
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  createdAt: Date;
}

/** Who is calling /reseller-management: the key and the reseller it acts for. */
export interface ManagementPrincipal {
  keyId: string;
  resellerId: string;
  scopes: ManagementScope[];
}

// last_used_at is written at most this often per key, so busy software does not write every call.
const LAST_USED_RESOLUTION_MS = 60_000;

function toManagementKey(row: ManagementKeyRow, now: Date): ManagementKey {
  const state = row.revoked_at ? 'revoked' : row.expires_at && row.expires_at <= now ? 'expired' : 'active';
  return {
    id: row.id,
    name: row.name,
    mask: row.mask,
    scopes: row.scopes as ManagementScope[],
    state,
    expiresAt: row.expires_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
    createdAt: row.created_at,
  };
}

/** Creates a key with the chosen scopes; the secret is in this answer and nowhere else. */
export async function createManagementKey(
  deps: KeyDeps,
  actor: Actor,
  input: { name: string; scopes: ManagementScope[]; expiresAt?: string | null },
): Promise<{ key: ManagementKey; secret: string }> {
  const now = deps.clock.now();
  const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
  if (expiresAt && expiresAt <= now)
    throw AppError.validation({ expiresAt: ['Choose a time in the future.'] });
  const limit = deps.config.managementKeys.perResellerLimit;
  const secret = generateManagementKeySecret();
  const row = await deps.db.transaction().execute(async (trx) => {
    if ((await countLiveKeysOfResellerLocked(trx, actor.accountId)) >= limit) {
      throw AppError.validation({ body: [`A reseller can hold at most ${limit} live management keys.`] });
    }
    const created = await insertManagementKey(trx, {
      reseller_id: actor.accountId,
      name: input.name,
      lookup_hash: lookupHashOf(deps.config.keyPepper, apiKeyDigest(secret)),
      mask: maskManagementKey(secret),
      scopes: [...new Set(input.scopes)],
      expires_at: expiresAt,
    });
    await recordAudit(trx, actor, {
      action: 'management_key.create',
      targetType: 'management_key',
      targetId: created.id,
      detail: { scopes: created.scopes },
    });
    return created;
  });
  return { key: toManagementKey(row, now), secret };
}

export async function listManagementKeys(deps: KeyDeps, resellerId: string): Promise<ManagementKey[]> {
  const now = deps.clock.now();
  return (await selectKeysOfReseller(deps.db, resellerId)).map((row) => toManagementKey(row, now));
}

/** Revocation is instant: every request looks the key up again. */
export async function revokeManagementKey(
  deps: KeyDeps,
  actor: Actor,
  keyId: string,
): Promise<ManagementKey> {
  if (!isUuid(keyId)) throw new AppError('not_found');
  const row = await deps.db.transaction().execute(async (trx) => {
    const revoked = await revokeKeyOfReseller(trx, actor.accountId, keyId, deps.clock.now());
    if (!revoked) throw new AppError('not_found');
    await recordAudit(trx, actor, {
      action: 'management_key.revoke',
      targetType: 'management_key',
      targetId: revoked.id,
    });
    return revoked;
  });
  return toManagementKey(row, deps.clock.now());
}

const UNAUTHENTICATED = 'Send a live management key as Authorization: Bearer mk-tg-...';

/**
 * Authenticates `Authorization: Bearer <management key>` and checks one scope. Unknown, revoked
 * or expired keys are unauthenticated; a reseller that lost its permission is forbidden; a
 * suspended one is account_suspended; a key without the scope is forbidden. Rate limited per key.
 */
export async function authenticateManagementKey(
  deps: KeyDeps,
  authorization: string | undefined,
  scope: ManagementScope,
): Promise<ManagementPrincipal> {
  const match = /^Bearer ([^\s]+)$/i.exec(authorization?.trim() ?? '');
  const secret = match?.[1];
  if (!secret || !isWellFormedManagementKey(secret)) {
    throw new AppError('unauthenticated', { message: UNAUTHENTICATED });
  }
  const row = await selectKeyForAuth(deps.db, lookupHashOf(deps.config.keyPepper, apiKeyDigest(secret)));
  const now = deps.clock.now();
  if (!row || row.revoked_at || (row.expires_at && row.expires_at <= now)) {
    throw new AppError('unauthenticated', { message: UNAUTHENTICATED });
  }
  if (row.reseller_status === 'suspended') throw new AppError('account_suspended');
  if (!row.is_reseller) throw new AppError('forbidden', { message: 'This account is no longer a reseller.' });
  await enforceThrottle(deps.db, throttleKey('management-key', row.id), deps.config.managementKeys.rate, now);
  if (!row.scopes.includes(scope)) {
    throw new AppError('forbidden', { message: `This management key lacks the ${scope} scope.` });
  }
  if (!row.last_used_at || now.getTime() - row.last_used_at.getTime() >= LAST_USED_RESOLUTION_MS) {
    await touchLastUsed(deps.db, row.id, now);
  }
  return { keyId: row.id, resellerId: row.reseller_id, scopes: row.scopes as ManagementScope[] };
}
