import { AppError } from '@tollgate/errors';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import type { HotStore } from './hot-store.ts';

/**
 * What the hot tier checks of a key and of its account on every reservation, kept in Redis as
 * small JSON entries with the version Postgres gave the row (migration 0012). An entry is written
 * only over an older one, so a slow read can never bring back a state that changed after it.
 */
export interface KeyEntry {
  v: string;
  st: 'active' | 'disabled' | 'revoked' | 'changing';
  /** Lookup hash (hex): a rotated key's old secret no longer matches. */
  h: string;
  /** Expiry (ms since the epoch), '0' for none. */
  x: string;
  /** The key's scope as ',alias,alias,', '' for every alias. */
  sc: string;
}

export interface AccountEntry {
  v: string;
  st: 'active' | 'suspended' | 'changing';
}

/** A change under way: the entry is not to be trusted until `until` (ms) or the change lands. */
interface ChangingEntry {
  v: string;
  st: 'changing';
  until: string;
}

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

export function keyEntryOf(row: KeyRow): KeyEntry {
  return {
    v: String(row.state_version),
    st: row.status,
    h: row.lookup_hash.toString('hex'),
    x: String(row.expires_at?.getTime() ?? 0),
    sc: row.scope && row.scope.length > 0 ? `,${row.scope.join(',')},` : '',
  };
}

export function accountEntryOf(row: AccountRow): AccountEntry {
  return { v: String(row.state_version), st: row.status };
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
    const entry: KeyEntry = row ? keyEntryOf(row) : { v: '0', st: 'revoked', h: '', x: '0', sc: '' };
    writes.push(store.writeEntry(names.key(keyId), entry, ENTRY_TTL_MS, now));
  }
  const accountEntry: AccountEntry = account ? accountEntryOf(account) : { v: '0', st: 'suspended' };
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
        await writeAll(store, outcome.changed, now(), (version) => ({
          v: version,
          st: 'changing',
          until: String(now() + CHANGE_MARK_MS),
        }));
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
    await writeAll(store, changed, now(), null).catch(() => {});
  }
  return result;
}

function writeAll(
  store: HotStore,
  changed: ChangedEntries,
  now: number,
  mark: ((version: string) => ChangingEntry) | null,
): Promise<unknown> {
  const names = store.keysOf(changed.accountId);
  const writes: Array<Promise<unknown>> = [];
  for (const key of changed.keys ?? []) {
    const entry = mark ? mark(String(key.state_version)) : keyEntryOf(key);
    writes.push(store.writeEntry(names.key(key.id), entry, ENTRY_TTL_MS, now));
  }
  if (changed.account) {
    const entry = mark ? mark(String(changed.account.state_version)) : accountEntryOf(changed.account);
    writes.push(store.writeEntry(names.account, entry, ENTRY_TTL_MS, now));
  }
  return Promise.all(writes);
}
