import type { Amounts } from '@tollgate/schemas';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { BillingEngine, LeaseSplit } from './billing-engine.ts';

export interface AccountBalances {
  /** Spendable now: usable (unexpired) entitlement tokens, and credit. */
  remaining: Amounts;
  /** Held by requests in flight. */
  reserved: Amounts;
}

type BalanceDeps = { db: Kysely<Database>; billing: BillingEngine };

/**
 * How an account's hot-tier lease splits what Postgres shows as reserved, per source (an
 * entitlement id, or 'c' for credit): `free` is spendable, `inFlight` held by calls under way.
 * Empty without a lease (or without the hot tier).
 */
export function leaseSplit(deps: Pick<BalanceDeps, 'billing'>, accountId: string): Promise<LeaseSplit> {
  return deps.billing.leaseSplit(accountId);
}

/** An entitlement's or the credit's own figures with its part of the lease split back out. */
export function withLease(
  figures: { remaining: bigint; reserved: bigint },
  part: { leased: bigint; free: bigint; inFlight: bigint } | undefined,
): { remaining: bigint; reserved: bigint } {
  if (!part) return figures;
  return {
    remaining: figures.remaining + part.free,
    reserved: figures.reserved - part.leased + part.inFlight,
  };
}

/**
 * Read-only balances of an account, optionally narrowed to entitlements usable for a key's scope.
 * Reserves and spends nothing.
 */
export async function readAccountBalances(
  deps: BalanceDeps,
  accountId: string,
  options: { now: Date; scope?: string[] | null } = { now: new Date() },
): Promise<AccountBalances> {
  const scope = options.scope ?? null;
  const split = await leaseSplit(deps, accountId);
  const entitlements = await deps.db
    .selectFrom('entitlements')
    .select(['id', 'remaining', 'reserved'])
    .where('account_id', '=', accountId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', options.now)]))
    // A scoped key can only draw from entitlements covering at least one alias of its scope.
    .$if(scope !== null, (query) =>
      query.where((eb) =>
        eb.or([eb('aliases', 'is', null), sql<boolean>`aliases && ${sql.val(scope)}::text[]`]),
      ),
    )
    .execute();
  const credit = await deps.db
    .selectFrom('credit_balances')
    .select(['available', 'reserved'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  const tokens = entitlements
    .map((row) => withLease(row, split.get(row.id)))
    .reduce(
      (sum, row) => ({ remaining: sum.remaining + row.remaining, reserved: sum.reserved + row.reserved }),
      {
        remaining: 0n,
        reserved: 0n,
      },
    );
  const credits = withLease(
    { remaining: credit?.available ?? 0n, reserved: credit?.reserved ?? 0n },
    split.get('c'),
  );
  return {
    remaining: { tokens: String(tokens.remaining), credits: String(credits.remaining) },
    reserved: { tokens: String(tokens.reserved), credits: String(credits.reserved) },
  };
}
