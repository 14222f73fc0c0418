import { AppError } from '@tollgate/errors';
import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import { type Actor, recordAudit } from '../audit/audit.service.ts';
import { changeCredit, grantPackage } from '../billing/billing.service.ts';
import {
  type Account,
  type AccountStatus,
  findAccountById,
  setAccountRoles,
  setAccountStatus,
  setResellerLink,
} from './accounts.service.ts';

/**
 * Admin actions on accounts. Each is audited (who, what, target, from where) in the transaction
 * that makes the change: the change and its audit row commit together or not at all.
 */

export async function readAccount(deps: Pick<Dependencies, 'db'>, accountId: string): Promise<Account> {
  const account = await findAccountById(deps.db, accountId);
  if (!account) throw new AppError('not_found');
  return account;
}

export async function changeAccountStatus(
  deps: Dependencies,
  actor: Actor & { account: Account },
  accountId: string,
  status: AccountStatus,
): Promise<Account> {
  return setAccountStatus(deps, actor.account, accountId, status, (trx, account) =>
    recordAudit(trx, actor, {
      action: `admin.account.${status === 'suspended' ? 'suspend' : 'unsuspend'}`,
      targetType: 'account',
      targetId: account.id,
    }),
  );
}

/** Sets or clears the admin and reseller permissions; an admin cannot drop its own admin role. */
export async function changeAccountRoles(
  deps: Dependencies,
  actor: Actor,
  accountId: string,
  roles: { admin?: boolean; reseller?: boolean },
): Promise<Account> {
  if (accountId === actor.accountId && roles.admin === false) {
    throw new AppError('forbidden', { message: 'You cannot remove your own admin permission.' });
  }
  await readAccount(deps, accountId);
  const account = await deps.db.transaction().execute(async (trx) => {
    const changed = await setAccountRoles(trx, accountId, roles);
    await recordAudit(trx, actor, {
      action: 'admin.account.roles',
      targetType: 'account',
      targetId: changed.id,
      detail: roles,
    });
    return changed;
  });
  await deps.events.publish({ type: 'account.changed', accountId: account.id });
  return account;
}

/** Attaches a customer to a reseller, or detaches it (null). */
export async function changeAccountReseller(
  deps: Dependencies,
  actor: Actor,
  accountId: string,
  resellerId: string | null,
): Promise<Account> {
  return deps.db.transaction().execute(async (trx) => {
    const account = await setResellerLink({ db: trx, clock: deps.clock }, accountId, resellerId);
    await recordAudit(trx, actor, {
      action: resellerId ? 'admin.account.attach_reseller' : 'admin.account.detach_reseller',
      targetType: 'account',
      targetId: account.id,
      detail: { resellerId },
    });
    return account;
  });
}

export type AdminGrant = { packageId: string } | { credits: bigint };

/**
 * Grants a package or credit out of nothing (the operator's own stock), with a required note.
 * With an Idempotency-Key either kind is granted once: a repeat answers `replay: true`.
 */
export async function grantToAccount(
  deps: Dependencies,
  actor: Actor,
  accountId: string,
  grant: AdminGrant,
  note: string,
  idempotencyKey: string | null,
): Promise<{ entitlementId: string | null; replay: boolean }> {
  const account = await readAccount(deps, accountId);
  const cause = `admin ${actor.accountId}: ${note}`;
  const key = idempotencyKey ? { idempotencyKey: `admin:${idempotencyKey}` } : {};
  // The audit row commits with the grant, or neither does; a replay grants and records nothing.
  const audit = (trx: Transaction<Database>, entitlementId: string | null) =>
    recordAudit(trx, actor, {
      action: 'admin.grant',
      targetType: 'account',
      targetId: account.id,
      detail: { ...('credits' in grant ? { credits: String(grant.credits) } : grant), note, entitlementId },
    });
  if ('credits' in grant) {
    const { replay } = await changeCredit(deps, {
      accountId: account.id,
      amount: grant.credits,
      kind: 'grant',
      cause,
      ...key,
      audit: (trx) => audit(trx, null),
    });
    return { entitlementId: null, replay };
  }
  return grantPackage(deps, { accountId: account.id, packageId: grant.packageId, cause, ...key, audit });
}

/**
 * Corrects credit by a signed amount (never below zero), with a required note. With an
 * Idempotency-Key it is made once: a repeat answers `replay: true`.
 */
export async function adjustAccountCredit(
  deps: Dependencies,
  actor: Actor,
  accountId: string,
  amount: bigint,
  note: string,
  idempotencyKey: string | null = null,
): Promise<{ replay: boolean }> {
  const account = await readAccount(deps, accountId);
  if (amount === 0n) throw AppError.validation({ amount: ['Use a non-zero amount.'] });
  const { replay } = await changeCredit(deps, {
    accountId: account.id,
    amount,
    kind: 'adjustment',
    cause: `admin ${actor.accountId}: ${note}`,
    // Its own namespace: a grant form and an adjustment form never replay each other.
    ...(idempotencyKey ? { idempotencyKey: `admin-adjust:${idempotencyKey}` } : {}),
    audit: (trx) =>
      recordAudit(trx, actor, {
        action: 'admin.credit_adjustment',
        targetType: 'account',
        targetId: account.id,
        detail: { amount: String(amount), note },
      }),
  });
  return { replay };
}
