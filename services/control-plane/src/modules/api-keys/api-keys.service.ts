import { randomUUID } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import {
  apiKeyDigest,
  generateApiKeySecret,
  type KeyLimits,
  type KeyState,
  type KeyStatus,
  maskApiKey,
} from '@tollgate/schemas';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import { isUuid } from '../accounts/accounts.service.ts';
import { readAccountBalances } from '../billing/balances.ts';
import { changeBillingEntries } from '../billing/engines.ts';
import { toSpendCapView } from '../spend-caps/spend-caps.schemas.ts';
import { readCapStatus } from '../spend-caps/spend-caps.service.ts';
import {
  type ApiKeyRow,
  countKeysOfAccountLocked,
  insertKey,
  selectKeyByLookupHash,
  selectKeyOfAccount,
  selectKeysOfAccount,
  updateUnrevokedKey,
} from './api-keys.repository.ts';
import { encryptSecret, lookupHashOf } from './key-crypto.ts';
import { checkScopeAliases, chooseKeyLimits } from './key-limits.service.ts';

/** An inference key as its owner sees it. Never carries the secret. */
export interface ApiKey {
  id: string;
  accountId: string;
  name: string;
  mask: string;
  state: KeyState;
  scope: string[] | null;
  expiresAt: Date | null;
  limits: KeyLimits;
  /** The current secret can be re-copied (created or rotated with re-copy support, not revoked). */
  revealable: boolean;
  createdAt: Date;
  updatedAt: Date;
  rotatedAt: Date | null;
  revokedAt: Date | null;
  /** Its last call, recorded at most once an hour (migration 0011); null: never used. */
  lastUsedAt: Date | null;
}

/** What the billing module needs to authorise a presented key. */
export interface KeyRecord {
  keyId: string;
  accountId: string;
  name: string;
  state: KeyState;
  expiresAt: Date | null;
  scope: string[] | null;
  limits: KeyLimits;
  accountSuspended: boolean;
}

export interface NewKeyInput {
  name: string;
  scope?: string[] | null;
  expiresAt?: string | null;
  limits?: Partial<KeyLimits>;
}

type KeyDeps = Pick<Dependencies, 'db' | 'clock' | 'config' | 'events' | 'billing'>;

/** Revoked is final, a passed expiry outranks a disabled flag (re-enabling would not help). */
export function stateOf(row: Pick<ApiKeyRow, 'status' | 'expires_at'>, now: Date): KeyState {
  if (row.status === 'revoked') return 'revoked';
  if (row.expires_at && row.expires_at <= now) return 'expired';
  return row.status;
}

function limitsOf(row: ApiKeyRow): KeyLimits {
  return {
    maxRequestBytes: row.max_request_bytes,
    maxOutputTokens: row.max_output_tokens,
    requestsPerMinute: row.requests_per_minute,
    concurrency: row.concurrency,
  };
}

export function toApiKey(row: ApiKeyRow, now: Date): ApiKey {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    mask: row.mask,
    state: stateOf(row, now),
    scope: row.scope,
    expiresAt: row.expires_at,
    limits: limitsOf(row),
    revealable: row.secret_ciphertext !== null && row.status !== 'revoked',
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    rotatedAt: row.rotated_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  };
}

/** A fresh secret and everything stored about it: lookup hash, re-copyable ciphertext, mask. */
function sealSecret(config: Dependencies['config'], keyId: string) {
  const secret = generateApiKeySecret();
  return {
    secret,
    stored: {
      lookup_hash: lookupHashOf(config.keyPepper, apiKeyDigest(secret)),
      secret_ciphertext: encryptSecret(config.keyEncryptionKey, keyId, secret),
      recoverable: true,
      mask: maskApiKey(secret),
    },
  };
}

/** The caller's own key, or not_found (also for another account's key or a malformed id). */
export async function findOwnKeyRow(
  db: Kysely<Database>,
  accountId: string,
  keyId: string,
): Promise<ApiKeyRow> {
  const row = isUuid(keyId) ? await selectKeyOfAccount(db, accountId, keyId) : undefined;
  if (!row) throw new AppError('not_found');
  return row;
}

/**
 * Creates a key; the full secret is in this answer and nowhere else, ever. A key the customer
 * configures (`chosenByCustomer`) stays within the account's maxima and plan ceilings and may only
 * name published aliases; the operator (CLI, fixtures) is not bound by them.
 */
export async function createKey(
  deps: KeyDeps,
  accountId: string,
  input: NewKeyInput,
  options: {
    chosenByCustomer?: boolean;
    /** Writes the creation's audit row in the transaction that inserts the key. */
    audit?: KeyAudit;
  } = {},
): Promise<{ key: ApiKey; secret: string }> {
  const { db, clock, config } = deps;
  const now = clock.now();
  const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
  if (expiresAt && expiresAt <= now)
    throw AppError.validation({ expiresAt: ['Choose a time in the future.'] });
  const asked = definedOnly(input.limits ?? {});
  let limits: KeyLimits;
  if (options.chosenByCustomer) {
    await checkScopeAliases(deps, input.scope);
    limits = await chooseKeyLimits(deps, accountId, asked);
  } else {
    limits = { ...config.keyDefaults, ...asked };
  }
  const id = randomUUID();
  const { secret, stored } = sealSecret(config, id);
  const row = await db.transaction().execute(async (trx) => {
    if ((await countKeysOfAccountLocked(trx, accountId)) >= config.keysPerAccountLimit) {
      throw AppError.validation({
        body: [`An account can hold at most ${config.keysPerAccountLimit} keys.`],
      });
    }
    const inserted = await insertKey(trx, {
      id,
      account_id: accountId,
      name: input.name,
      ...stored,
      scope: input.scope && input.scope.length > 0 ? [...new Set(input.scope)] : null,
      expires_at: expiresAt,
      max_request_bytes: limits.maxRequestBytes,
      max_output_tokens: limits.maxOutputTokens,
      requests_per_minute: limits.requestsPerMinute,
      concurrency: limits.concurrency,
    });
    await options.audit?.(trx, inserted);
    return inserted;
  });
  await deps.events.publish({ type: 'key.changed', keyId: id });
  return { key: toApiKey(row, now), secret };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as Partial<T>;
}

export async function listKeys(
  deps: Pick<Dependencies, 'db' | 'clock'>,
  accountId: string,
): Promise<ApiKey[]> {
  const now = deps.clock.now();
  return (await selectKeysOfAccount(deps.db, accountId)).map((row) => toApiKey(row, now));
}

/** New secret for the same key; the previous one stops resolving at once. Revoked keys stay dead. */
export async function rotateKey(
  deps: KeyDeps,
  accountId: string,
  keyId: string,
): Promise<{ key: ApiKey; secret: string }> {
  const existing = await findOwnKeyRow(deps.db, accountId, keyId);
  const now = deps.clock.now();
  const { secret, stored } = sealSecret(deps.config, existing.id);
  const row = await changeKey(deps, accountId, (trx) =>
    updateUnrevokedKey(trx, accountId, existing.id, { ...stored, rotated_at: now, updated_at: now }),
  );
  if (!row)
    throw new AppError('forbidden', { message: 'A revoked key cannot be rotated. Create a new key.' });
  await deps.events.publish({ type: 'key.changed', keyId: row.id });
  return { key: toApiKey(row, now), secret };
}

export type KeyStatusChange = 'active' | 'disabled' | 'revoked';

/** Writes a key change's audit row in the change's transaction. */
export type KeyAudit = (trx: Transaction<Database>, key: ApiKeyRow) => Promise<void>;

/**
 * Disable, re-enable or revoke. Revoked is permanent: re-enabling or disabling it is forbidden;
 * revoking again changes nothing. Revoking also drops the re-copyable ciphertext.
 */
export async function changeKeyStatus(
  deps: KeyDeps,
  accountId: string,
  keyId: string,
  target: KeyStatusChange,
  audit?: KeyAudit,
): Promise<ApiKey> {
  const existing = await findOwnKeyRow(deps.db, accountId, keyId);
  const now = deps.clock.now();
  // Nothing changes, so nothing is audited.
  if (existing.status === target) return toApiKey(existing, now);
  const row = await changeKey(deps, accountId, async (trx) => {
    const changed = await updateUnrevokedKey(trx, accountId, existing.id, statusChanges(target, now));
    if (changed && audit) await audit(trx, changed);
    return changed;
  });
  if (!row) {
    if (target === 'revoked') return toApiKey(await findOwnKeyRow(deps.db, accountId, keyId), now);
    throw new AppError('forbidden', {
      message: 'A revoked key cannot be re-enabled or disabled; revocation is permanent.',
    });
  }
  await deps.events.publish({ type: 'key.changed', keyId: row.id });
  return toApiKey(row, now);
}

function statusChanges(target: KeyStatusChange, now: Date) {
  return target === 'revoked'
    ? { status: target, revoked_at: now, secret_ciphertext: null, updated_at: now }
    : { status: target, updated_at: now };
}

/**
 * Revokes these keys of the account inside the caller's transaction, one that changes the account
 * through changeBillingEntries (the rows returned are the entries it must mark). Keys revoked
 * already, or not the account's, are left out. The caller publishes key.changed after the commit.
 */
export async function revokeKeysIn(
  trx: Transaction<Database>,
  accountId: string,
  keyIds: readonly string[],
  now: Date,
): Promise<ApiKeyRow[]> {
  const revoked: ApiKeyRow[] = [];
  for (const keyId of keyIds) {
    if (!isUuid(keyId)) continue;
    const row = await updateUnrevokedKey(trx, accountId, keyId, statusChanges('revoked', now));
    if (row) revoked.push(row);
  }
  return revoked;
}

/**
 * A change of a key's state or secret, so that the hot tier refuses the old state from the moment
 * the change answers (hot-entries.ts): the row's entry is marked before the commit, rewritten
 * after it.
 */
function changeKey(
  deps: KeyDeps,
  accountId: string,
  update: (trx: Transaction<Database>) => Promise<ApiKeyRow | undefined>,
): Promise<ApiKeyRow | undefined> {
  return changeBillingEntries(deps, async (trx) => {
    const row = await update(trx);
    return { result: row, changed: row ? { accountId, keys: [row] } : null };
  });
}

/** Validates a key from the dashboard: state, scope, ceilings and balance. Spends nothing. */
export async function readKeyStatus(
  deps: Pick<Dependencies, 'db' | 'clock' | 'billing'>,
  accountId: string,
  keyId: string,
): Promise<KeyStatus> {
  const row = await findOwnKeyRow(deps.db, accountId, keyId);
  const now = deps.clock.now();
  const balances = await readAccountBalances(deps, accountId, { now, scope: row.scope });
  return {
    keyId: row.id,
    name: row.name,
    state: stateOf(row, now),
    expiresAt: row.expires_at?.toISOString() ?? null,
    scope: row.scope,
    limits: limitsOf(row),
    remaining: balances.remaining,
    reserved: balances.reserved,
    caps: (await readCapStatus(deps, accountId, row.id)).caps.map(toSpendCapView),
  };
}

/**
 * For the billing module (internal API): the key whose secret has this digest, or null.
 * `digestHex` is the lower-case hex SHA-256 of the presented secret.
 */
export async function findKeyByDigest(
  db: Kysely<Database>,
  pepper: string,
  digestHex: string,
  now: Date,
): Promise<KeyRecord | null> {
  if (!/^[0-9a-f]{64}$/.test(digestHex)) return null;
  const row = await selectKeyByLookupHash(db, lookupHashOf(pepper, digestHex));
  if (!row) return null;
  return {
    keyId: row.id,
    accountId: row.account_id,
    name: row.name,
    state: stateOf(row, now),
    expiresAt: row.expires_at,
    scope: row.scope,
    limits: limitsOf(row),
    accountSuspended: row.account_status === 'suspended',
  };
}
