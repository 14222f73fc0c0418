import type { Amounts } from '@tollgate/schemas';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.ts';

export interface AccountBalances {
  /** Spendable now: usable (unexpired) entitlement tokens, and credit. */
  remaining: Amounts;
  /** Held by requests in flight. */
  reserved: Amounts;
}

/**
 * Read-only balances of an account, optionally narrowed to entitlements usable for a key's scope.
 * Reserves and spends nothing.
 */
export async function readAccountBalances(
  db: Kysely<Database>,
  accountId: string,
  options: { now: Date; scope?: string[] | null } = { now: new Date() },
): Promise<AccountBalances> {
  const scope = options.scope ?? null;
  const tokens = await db
    .selectFrom('entitlements')
    .select([
      sql<bigint>`coalesce(sum(remaining), 0)::bigint`.as('remaining'),
      sql<bigint>`coalesce(sum(reserved), 0)::bigint`.as('reserved'),
    ])
    .where('account_id', '=', accountId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', options.now)]))
    // A scoped key can only draw from entitlements covering at least one alias of its scope.
    .$if(scope !== null, (query) =>
      query.where((eb) =>
        eb.or([eb('aliases', 'is', null), sql<boolean>`aliases && ${sql.val(scope)}::text[]`]),
      ),
    )
    .executeTakeFirstOrThrow();
  const credit = await db
    .selectFrom('credit_balances')
    .select(['available', 'reserved'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return {
    remaining: { tokens: String(tokens.remaining), credits: String(credit?.available ?? 0n) },
    reserved: { tokens: String(tokens.reserved), credits: String(credit?.reserved ?? 0n) },
  };
}
