/**
 * What other packages' tests use to stand up and inspect a real control plane (the gateway's
 * service tests, test-e2e). Not part of the runtime.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.ts';
import { leaseSplit, withLease } from '../src/modules/billing/balances.ts';
import type { BillingEngine } from '../src/modules/billing/engines.ts';

export { createAccount, setAccountRoles } from '../src/modules/accounts/accounts.service.ts';
export { changeKeyStatus, createKey, rotateKey } from '../src/modules/api-keys/api-keys.service.ts';
export { changeCredit, grantPackage } from '../src/modules/billing/billing.service.ts';
export { verifyLedger } from '../src/modules/billing/ledger-check.ts';
export { setCapTimeZone, setSpendCap } from '../src/modules/spend-caps/spend-caps.service.ts';
export { type RunningControlPlane, startControlPlane } from '../src/server.ts';

/**
 * Token and credit balances of an account (every entitlement, expired or not): spendable and
 * reserved, with a hot-tier lease split back into what is free and what calls in flight hold.
 */
export async function balancesOf(deps: { db: Kysely<Database>; billing: BillingEngine }, accountId: string) {
  const split = await leaseSplit(deps, accountId);
  const entitlements = await deps.db
    .selectFrom('entitlements')
    .select(['id', 'remaining', 'reserved'])
    .where('account_id', '=', accountId)
    .execute();
  const credit = await deps.db
    .selectFrom('credit_balances')
    .select(['available', 'reserved'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  const tokens = entitlements.map((row) => withLease(row, split.get(row.id)));
  const credits = withLease(
    { remaining: credit?.available ?? 0n, reserved: credit?.reserved ?? 0n },
    split.get('c'),
  );
  return {
    tokens: tokens.reduce((sum, row) => sum + row.remaining, 0n),
    reservedTokens: tokens.reduce((sum, row) => sum + row.reserved, 0n),
    credits: credits.remaining,
    reservedCredits: credits.reserved,
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
