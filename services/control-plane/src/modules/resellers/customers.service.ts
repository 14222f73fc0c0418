import { AppError } from '@tollgate/errors';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import {
  type Account,
  type AccountPage,
  findAccountById,
  listResellerCustomers,
} from '../accounts/accounts.service.ts';
import {
  type ApiKey,
  changeKeyStatus,
  createKey,
  type KeyStatusChange,
  listKeys,
  type NewKeyInput,
} from '../api-keys/api-keys.service.ts';
import { type Actor, recordAudit } from '../audit/audit.service.ts';
import { type ActivityQuery, listActivity, readBalance, summarizeUsage } from '../billing/reports.service.ts';

/**
 * The reseller's view of its customers. Every lookup is narrowed to the caller's own customers:
 * anyone else's account, or a malformed id, is not_found with no hint that it exists.
 */
export async function findCustomer(
  db: Kysely<Database>,
  resellerId: string,
  customerId: string,
): Promise<Account> {
  const account = await findAccountById(db, customerId);
  if (!account || account.resellerId !== resellerId) throw new AppError('not_found');
  return account;
}

export function listCustomers(
  db: Kysely<Database>,
  resellerId: string,
  page: { limit: number; after?: string },
): Promise<AccountPage> {
  return listResellerCustomers(db, resellerId, page);
}

/** Balance and settled usage per day and alias over [from, to] (UTC days, inclusive). */
export async function readCustomerUsage(
  deps: Dependencies,
  resellerId: string,
  customerId: string,
  range: { from: string; to: string },
) {
  const customer = await findCustomer(deps.db, resellerId, customerId);
  return {
    customerId: customer.id,
    balance: await readBalance(deps, customer.id),
    days: await summarizeUsage(deps, customer.id, range),
  };
}

export async function readCustomerActivity(
  deps: Dependencies,
  resellerId: string,
  customerId: string,
  query: ActivityQuery,
) {
  const customer = await findCustomer(deps.db, resellerId, customerId);
  return listActivity(deps, customer.id, query);
}

export async function listCustomerKeys(
  deps: Dependencies,
  resellerId: string,
  customerId: string,
): Promise<ApiKey[]> {
  const customer = await findCustomer(deps.db, resellerId, customerId);
  return listKeys(deps, customer.id);
}

/** An inference key owned by the customer; the secret is returned once. */
export async function createCustomerKey(
  deps: Dependencies,
  actor: Actor,
  customerId: string,
  input: NewKeyInput,
): Promise<{ key: ApiKey; secret: string }> {
  const customer = await findCustomer(deps.db, actor.accountId, customerId);
  // A reseller chooses for its customer: the customer's maxima and plan ceilings bound it.
  // The audit row is the record of who made the key (ending the link revokes the reseller's keys
  // by it), so it commits with the key.
  return createKey(deps, customer.id, input, {
    chosenByCustomer: true,
    audit: (trx, key) =>
      recordAudit(trx, actor, {
        action: 'reseller.api_key.create',
        targetType: 'api_key',
        targetId: key.id,
        detail: { customerId: customer.id },
      }),
  });
}

export async function changeCustomerKeyStatus(
  deps: Dependencies,
  actor: Actor,
  customerId: string,
  keyId: string,
  status: KeyStatusChange,
): Promise<ApiKey> {
  const customer = await findCustomer(deps.db, actor.accountId, customerId);
  return changeKeyStatus(deps, customer.id, keyId, status, (trx, key) =>
    recordAudit(trx, actor, {
      action: 'reseller.api_key.status',
      targetType: 'api_key',
      targetId: key.id,
      detail: { customerId: customer.id, status },
    }),
  );
}
