import { AppError } from '@tollgate/errors';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { ACCOUNT_ENTRY_FIELDS, joinFields, KEY_ENTRY_FIELDS } from './hot-layout.ts';
import type { HotStore } from './hot-store.ts';

/**
 * What the hot tier checks of a key and of its account on every reservation, kept in Redis as
 * short strings with the version Postgres gave the row (KEY_ENTRY_FIELDS, ACCOUNT_ENTRY_FIELDS). An entry is written only
 * over an older one, so a slow read can never bring back a state that changed after it.
 *   key      `version|state|lookup hash (hex)|expiry ms (0: none)|,alias,alias,` ('' = any alias)
 *   account  `version|state`
 *   change under way (not to be trusted until it lands or `until` passes)  `version|changing|until ms`
 */
/** Entries expire unused after this long (and are read again from Postgres when needed). */
export const ENTRY_TTL_MS = 3_600_000;
/** How long a change may take in Postgres; past it, its mark no longer blocks a fresh read. */
const CHANGE_MARK_MS = 10_000;

type Db = Kysely<Database> | Transaction<Database>;

export interface KeyRow {
  id: string;
  account_id: string;
  lookup_hash: Buffer;
  status: 'active' | 'disabled' | 'revoked';
  expires_at: Date | null;
  scope: string[] | null;
  state_version: bigint;
}

export interface AccountRow {
  id: string;
  status: 'active' | 'suspended';
  state_version: bigint;
}

export function keyEntryOf(row: KeyRow): string {
  const scope = row.scope && row.scope.length > 0 ? `,${row.scope.join(',')},` : '';
  return joinFields(KEY_ENTRY_FIELDS, {
    version: String(row.state_version),
    state: row.status,
    lookupHash: row.lookup_hash.toString('hex'),
    expiresAt: row.expires_at?.getTime() ?? 0,
    scope,
  });
}

export function accountEntryOf(row: AccountRow): string {
  return joinFields(ACCOUNT_ENTRY_FIELDS, { version: String(row.state_version), state: row.status });
}

function changingEntry(version: bigint, until: number): string {
  return `${version}|changing|${until}`;
}

/** The rows behind the entries of these keys and their account (one account). */
export async function readEntryRows(
  db: Db,
  accountId: string,
  keyIds: string[],
): Promise<{ keys: KeyRow[]; account: AccountRow | undefined }> {
  const keys =
    keyIds.length === 0
      ? []
      : await db
          .selectFrom('api_keys')
          .select(['id', 'account_id', 'lookup_hash', 'status', 'expires_at', 'scope', 'state_version'])
          .where('id', 'in', keyIds)
          .where('account_id', '=', accountId)
          .execute();
  const account = await db
    .selectFrom('accounts')
    .select(['id', 'status', 'state_version'])
    .where('id', '=', accountId)
    .executeTakeFirst();
  return { keys, account };
}

/**
 * Writes the entries of these keys and their account as Postgres has them now. A key that does
 * not exist (or is another account's) gets a revoked entry with no lookup hash: refused, never
 * trusted.
 */
export async function loadEntries(
  store: HotStore,
  db: Db,
  accountId: string,
  keyIds: string[],
  now: number,
): Promise<void> {
  const { keys, account } = await readEntryRows(db, accountId, keyIds);
  const names = store.keysOf(accountId);
  const writes: Array<Promise<unknown>> = [];
  for (const keyId of keyIds) {
    const row = keys.find((key) => key.id === keyId);
    const entry = row ? keyEntryOf(row) : '0|revoked||0|';
    writes.push(store.writeEntry(names.key(keyId), entry, ENTRY_TTL_MS, now));
  }
  const accountEntry = account ? accountEntryOf(account) : '0|suspended';
  writes.push(store.writeEntry(names.account, accountEntry, ENTRY_TTL_MS, now));
  await Promise.all(writes);
}

/** What a change of keys or of an account touched, as the rows are after it. */
export interface ChangedEntries {
  accountId: string;
  keys?: KeyRow[];
  account?: AccountRow;
}

/**
 * Runs a change of key or account state (revoke, disable, rotate, suspend...) so that no
 * reservation can see the old state once the change has answered: inside the transaction, after
 * the rows changed (and got their new versions), their entries are marked as changing, so the
 * hot tier reads them from Postgres again; after the commit the new state is written. If Redis
 * cannot be told, the change is rolled back and refused (503): it never lands unseen.
 */
export async function changeEntries<T>(
  store: HotStore | null,
  db: Kysely<Database>,
  now: () => number,
  change: (trx: Transaction<Database>) => Promise<{ result: T; changed: ChangedEntries | null }>,
): Promise<T> {
  const { result, changed } = await db.transaction().execute(async (trx) => {
    const outcome = await change(trx);
    if (store && outcome.changed) {
      try {
        await writeEntries(store, outcome.changed, now(), (version) =>
          changingEntry(version, now() + CHANGE_MARK_MS),
        );
      } catch (error) {
        throw new AppError(
          'server_error',
          { message: 'The change could not be applied right now. Please retry.', cause: error },
          503,
        );
      }
    }
    return outcome;
  });
  if (store && changed) {
    // Best effort: a mark left behind only makes the next reservation read Postgres.
    await writeEntries(store, changed, now(), null).catch(() => {});
  }
  return result;
}

/** Writes the entries of these rows, or, with `mark`, marks them as changing. */
export function writeEntries(
  store: HotStore,
  changed: ChangedEntries,
  now: number,
  mark: ((version: bigint) => string) | null,
): Promise<unknown> {
  const names = store.keysOf(changed.accountId);
  const writes: Array<Promise<unknown>> = [];
  for (const key of changed.keys ?? []) {
    const entry = mark ? mark(key.state_version) : keyEntryOf(key);
    writes.push(store.writeEntry(names.key(key.id), entry, ENTRY_TTL_MS, now));
  }
  if (changed.account) {
    const entry = mark ? mark(changed.account.state_version) : accountEntryOf(changed.account);
    writes.push(store.writeEntry(names.account, entry, ENTRY_TTL_MS, now));
  }
  return Promise.all(writes);
}
