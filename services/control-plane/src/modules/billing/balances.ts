import type { Amounts } from '@tollgate/schemas';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { HotTier } from './hot/hot-tier.ts';

export interface AccountBalances {
  /** Spendable now: usable (unexpired) entitlement tokens, and credit. */
  remaining: Amounts;
  /** Held by requests in flight. */
  reserved: Amounts;
}

type BalanceDeps = { db: Kysely<Database>; hot: HotTier | null };

/**
 * How an account's hot-tier lease splits what Postgres shows as reserved, per source (an
 * entitlement id, or 'c' for credit): `free` is spendable, `inFlight` held by calls under way.
 * Postgres counts the whole lease (`leased`) as reserved. Without Redis's view (unreachable, or no
 * lease there) the whole lease stays shown as reserved: never more spendable than is certain.
 */
export async function leaseSplit(
  deps: BalanceDeps,
  accountId: string,
): Promise<Map<string, { leased: bigint; free: bigint; inFlight: bigint }>> {
  const split = new Map<string, { leased: bigint; free: bigint; inFlight: bigint }>();
  if (!deps.hot) return split;
  const parts = await deps.db
    .selectFrom('hot_lease_parts as p')
    .innerJoin('hot_leases as l', 'l.id', 'p.lease_id')
    .select([
      'l.id as lease_id',
      'p.entitlement_id',
      sql<bigint>`p.leased - p.returned - p.spent - p.held`.as('outstanding'),
    ])
    .where('l.account_id', '=', accountId)
    .where('l.closed_at', 'is', null)
    .execute();
  if (parts.length === 0) return split;
  const view = await deps.hot.view(accountId).catch(() => null);
  for (const part of parts) {
    const source = part.entitlement_id ?? 'c';
    const redis = view?.leaseId === part.lease_id ? view.sources.get(source) : undefined;
    // Redis counts a call's charge before Postgres does: never show more free than Postgres holds.
    const free = redis ? min(max(redis.free, 0n), part.outstanding) : 0n;
    split.set(source, { leased: part.outstanding, free, inFlight: part.outstanding - free });
  }
  return split;
}

const min = (a: bigint, b: bigint) => (a < b ? a : b);
const max = (a: bigint, b: bigint) => (a > b ? a : b);

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
