/**
 * What other packages' tests use to stand up and inspect a real control plane (the gateway's
 * service tests, test-e2e). Not part of the runtime.
 */
import type { Kysely } from 'kysely';
import type { Database } from './db/schema.ts';

export { createAccount, setAccountRoles } from './modules/accounts/accounts.service.ts';
export { changeKeyStatus, createKey, rotateKey } from './modules/api-keys/api-keys.service.ts';
export { changeCredit, grantPackage } from './modules/billing/billing.service.ts';
export { verifyLedger } from './modules/billing/ledger-check.ts';
export { type RunningControlPlane, startControlPlane } from './server.ts';

/** Token and credit balances of an account: spendable and reserved. */
export async function balancesOf(db: Kysely<Database>, accountId: string) {
  const entitlements = await db
    .selectFrom('entitlements')
    .select(['remaining', 'reserved'])
    .where('account_id', '=', accountId)
    .execute();
  const credit = await db
    .selectFrom('credit_balances')
    .select(['available', 'reserved'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return {
    tokens: entitlements.reduce((sum, row) => sum + row.remaining, 0n),
    reservedTokens: entitlements.reduce((sum, row) => sum + row.reserved, 0n),
    credits: credit?.available ?? 0n,
    reservedCredits: credit?.reserved ?? 0n,
  };
}

/** Reservations of an account (the activity rows), oldest first. */
export function reservationsOf(db: Kysely<Database>, accountId: string) {
  return db
    .selectFrom('reservations')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('created_at')
    .execute();
}
