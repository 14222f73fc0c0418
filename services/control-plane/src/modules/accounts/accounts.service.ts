import { AppError } from '@tollgate/errors';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import { changeBillingEntries } from '../billing/engines.ts';
import {
  type AccountRow,
  insertAccount,
  selectAccountByEmail,
  selectAccountById,
  selectAccounts,
  updateAccountRow,
} from './accounts.repository.ts';

export type AccountStatus = 'active' | 'suspended';

/** An account as the rest of the control plane sees it (no password hash). */
export interface Account {
  id: string;
  email: string;
  displayName: string | null;
  status: AccountStatus;
  isAdmin: boolean;
  isReseller: boolean;
  resellerId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface AccountPage {
  items: Account[];
  /** Pass as `after` for the next page; null on the last page. */
  nextCursor: string | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids arrive from URLs; anything that is not a uuid cannot name a record. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

function toAccount(row: AccountRow): Account {
  return {
    id: row.id,
    email: row.email,
    displayName: row.display_name,
    status: row.status,
    isAdmin: row.is_admin,
    isReseller: row.is_reseller,
    resellerId: row.reseller_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function findAccountById(db: Kysely<Database>, id: string): Promise<Account | null> {
  if (!isUuid(id)) return null;
  const row = await selectAccountById(db, id);
  return row ? toAccount(row) : null;
}

/** For the operator CLI and sign-in: the account registered under an email, any letter case. */
export async function findAccountByEmail(db: Kysely<Database>, email: string): Promise<Account | null> {
  const row = await selectAccountByEmail(db, normalizeEmail(email));
  return row ? toAccount(row) : null;
}

/** Sign-in needs the stored hash; nothing else should. */
export async function findCredentialsByEmail(
  db: Kysely<Database>,
  email: string,
): Promise<{ account: Account; passwordHash: string } | null> {
  const row = await selectAccountByEmail(db, normalizeEmail(email));
  return row ? { account: toAccount(row), passwordHash: row.password_hash } : null;
}

export async function findPasswordHash(db: Kysely<Database>, accountId: string): Promise<string | null> {
  const row = await selectAccountById(db, accountId);
  return row?.password_hash ?? null;
}

export async function createAccount(
  db: Kysely<Database>,
  values: { email: string; passwordHash: string; displayName: string | null; resellerId?: string | null },
): Promise<Account> {
  return toAccount(await insertAccount(db, { ...values, email: normalizeEmail(values.email) }));
}

/**
 * Attaches a customer to a reseller (or detaches it with null). The reseller must hold the
 * reseller permission and cannot be the customer itself.
 */
export async function setResellerLink(
  deps: Pick<Dependencies, 'db' | 'clock'>,
  accountId: string,
  resellerId: string | null,
): Promise<Account> {
  if (resellerId !== null) {
    const customer = await findAccountById(deps.db, accountId);
    // A reseller manages its customers' keys: never an operator's account.
    if (customer?.isAdmin)
      throw AppError.validation({ resellerId: ['An admin account cannot be a reseller’s customer.'] });
    if (resellerId === accountId)
      throw AppError.validation({ resellerId: ['An account cannot be its own reseller.'] });
    const reseller = await findAccountById(deps.db, resellerId);
    if (!reseller?.isReseller)
      throw AppError.validation({ resellerId: ['Name an account that holds the reseller permission.'] });
  }
  return updateAccount(deps.db, accountId, { reseller_id: resellerId, updated_at: deps.clock.now() });
}

async function updateAccount(
  db: Kysely<Database>,
  accountId: string,
  changes: Parameters<typeof updateAccountRow>[2],
): Promise<Account> {
  if (!isUuid(accountId)) throw new AppError('not_found');
  const row = await updateAccountRow(db, accountId, changes);
  if (!row) throw new AppError('not_found');
  return toAccount(row);
}

export async function updateProfile(
  deps: Pick<Dependencies, 'db' | 'clock'>,
  accountId: string,
  changes: { displayName?: string | null },
): Promise<Account> {
  if (changes.displayName === undefined) {
    const account = await findAccountById(deps.db, accountId);
    if (!account) throw new AppError('not_found');
    return account;
  }
  return updateAccount(deps.db, accountId, {
    display_name: changes.displayName,
    updated_at: deps.clock.now(),
  });
}

export async function setPasswordHash(
  deps: Pick<Dependencies, 'db' | 'clock'>,
  accountId: string,
  passwordHash: string,
): Promise<void> {
  await updateAccount(deps.db, accountId, { password_hash: passwordHash, updated_at: deps.clock.now() });
}

/** For the operator CLI: grants or withdraws the admin and reseller permissions. */
export async function setAccountRoles(
  db: Kysely<Database>,
  accountId: string,
  roles: { admin?: boolean; reseller?: boolean },
): Promise<Account> {
  return updateAccount(db, accountId, {
    ...(roles.admin === undefined ? {} : { is_admin: roles.admin }),
    ...(roles.reseller === undefined ? {} : { is_reseller: roles.reseller }),
    updated_at: new Date(),
  });
}

/** Admin: suspends or reinstates an account; gateways drop what they cached about it. */
export async function setAccountStatus(
  deps: Pick<Dependencies, 'db' | 'clock' | 'events' | 'billing'>,
  actor: Account,
  accountId: string,
  status: AccountStatus,
  audit?: StatusAudit,
): Promise<Account> {
  if (accountId === actor.id && status === 'suspended') {
    throw new AppError('forbidden', { message: 'You cannot suspend your own account.' });
  }
  if (!isUuid(accountId)) throw new AppError('not_found');
  return writeAccountStatus(deps, accountId, status, audit);
}

/** Writes a status change's audit row in the change's transaction. */
export type StatusAudit = (trx: Transaction<Database>, account: Account) => Promise<void>;

/**
 * Holds every spending of an account whose payment is disputed: suspended as an admin suspends
 * (an admin reinstates it), by the service itself on the payment provider's word; its audit row
 * is written in the suspension's transaction.
 */
export async function suspendForDispute(
  deps: Pick<Dependencies, 'db' | 'clock' | 'events' | 'billing'>,
  accountId: string,
  audit: StatusAudit,
): Promise<void> {
  await writeAccountStatus(deps, accountId, 'suspended', audit);
}

async function writeAccountStatus(
  deps: Pick<Dependencies, 'db' | 'clock' | 'events' | 'billing'>,
  accountId: string,
  status: AccountStatus,
  audit?: StatusAudit,
): Promise<Account> {
  // The hot tier refuses a suspended account's calls from the moment this answers (hot-entries.ts).
  const row = await changeBillingEntries(deps, async (trx) => {
    const updated = await updateAccountRow(trx, accountId, { status, updated_at: deps.clock.now() });
    if (updated && audit) await audit(trx, toAccount(updated));
    return { result: updated, changed: updated ? { accountId, account: updated } : null };
  });
  if (!row) throw new AppError('not_found');
  const account = toAccount(row);
  await deps.events.publish({ type: 'account.changed', accountId: account.id });
  return account;
}

function pageOf(rows: AccountRow[], limit: number): AccountPage {
  const items = rows.map(toAccount);
  const last = items.at(-1);
  return { items, nextCursor: items.length === limit && last ? last.id : null };
}

export async function listAccounts(
  db: Kysely<Database>,
  options: {
    limit: number;
    after?: string;
    email?: string;
    resellerId?: string;
    status?: AccountStatus;
    role?: 'admin' | 'reseller';
  },
): Promise<AccountPage> {
  if (options.after && !isUuid(options.after)) return { items: [], nextCursor: null };
  const rows = await selectAccounts(db, {
    limit: options.limit,
    after: options.after,
    emailContains: options.email,
    resellerId: options.resellerId,
    status: options.status,
    role: options.role,
  });
  return pageOf(rows, options.limit);
}

/** Reseller: only accounts whose reseller is the caller. */
export async function listResellerCustomers(
  db: Kysely<Database>,
  resellerId: string,
  options: { limit: number; after?: string },
): Promise<AccountPage> {
  if (options.after && !isUuid(options.after)) return { items: [], nextCursor: null };
  const rows = await selectAccounts(db, { limit: options.limit, after: options.after, resellerId });
  return pageOf(rows, options.limit);
}
