import { AppError } from '@tollgate/errors';
import type { Dependencies } from '../../deps.ts';
import { findAccountById } from '../accounts/accounts.service.ts';
import { findOwnKeyRow } from '../api-keys/api-keys.service.ts';
import type { Actor } from '../audit/audit.service.ts';
import { findCustomer } from '../resellers/customers.service.ts';
import type { CapParty } from './spend-caps.counting.ts';
import { type CapChange, readCapStatus, setSpendCap } from './spend-caps.service.ts';

type CapDeps = Pick<Dependencies, 'db' | 'clock' | 'caps' | 'billing'>;

/**
 * Who may cap what: a customer its own keys; a reseller its customers' accounts and their keys;
 * an admin any account or key. Anything else is not_found, as elsewhere.
 */
export async function accountFor(
  deps: CapDeps,
  party: CapParty,
  actorAccountId: string,
  accountId: string,
): Promise<string> {
  if (party === 'customer') {
    if (accountId !== actorAccountId) throw new AppError('not_found');
    return accountId;
  }
  if (party === 'reseller') return (await findCustomer(deps.db, actorAccountId, accountId)).id;
  if (!(await findAccountById(deps.db, accountId))) throw new AppError('not_found');
  return accountId;
}

/** Sets a party's cap on an account (keyId null) or one of its keys; answers the account's caps. */
export async function changeCap(
  deps: CapDeps,
  actor: Actor,
  party: CapParty,
  accountId: string,
  change: {
    keyId: string | null;
    unit: CapChange['unit'];
    period: CapChange['period'];
    limit: string | null;
  },
) {
  const account = await accountFor(deps, party, actor.accountId, accountId);
  if (change.keyId !== null) await findOwnKeyRow(deps.db, account, change.keyId);
  await setSpendCap(
    deps,
    actor,
    party,
    { accountId: account, keyId: change.keyId },
    { unit: change.unit, period: change.period, limit: change.limit === null ? null : BigInt(change.limit) },
  );
  return readCapStatus(deps, account);
}

/** Every cap of an account and of its keys, with what each has used. */
export async function listCaps(deps: CapDeps, party: CapParty, actorAccountId: string, accountId: string) {
  return readCapStatus(deps, await accountFor(deps, party, actorAccountId, accountId));
}
