import { sql } from 'kysely';
import type { findPackage } from '../catalog/catalog.service.ts';
import type { BalanceChange } from './engines.ts';
import * as repository from './ledger.repository.ts';

type PackageRow = Awaited<ReturnType<typeof findPackage>>;

/**
 * What a paid order grants: one entitlement of the package (bonus tokens included) and credit;
 * a top-up (no package) grants its credits alone.
 */
export interface OrderGrant {
  orderId: string;
  accountId: string;
  /** The package as the catalogue has it now (validity, aliases, ceilings); null for a top-up. */
  pack: PackageRow | null;
  tokens: bigint;
  /** Credits: a top-up's, plus a promotion's bonus. */
  bonusCredits: bigint;
  now: Date;
}

/**
 * Grants a paid order inside the caller's transaction (the one that marks the order paid), with
 * the same rows and ledger kinds as grant-package and grant-credit. The entitlement's idempotency
 * key `order:<id>` makes a second grant of the same order impossible even if a caller erred.
 */
export async function grantOrderInTransaction(
  balances: BalanceChange,
  grant: OrderGrant,
): Promise<{ entitlementId: string | null }> {
  const { pack } = grant;
  const { trx } = balances;
  await balances.lock(grant.accountId);
  const cause = `order ${grant.orderId}`;
  const entitlementId =
    pack &&
    (await repository.insertEntitlement(trx, {
      account_id: grant.accountId,
      package_id: pack.id,
      aliases: pack.aliases,
      granted: grant.tokens,
      expires_at:
        pack.validity_days === null ? null : new Date(grant.now.getTime() + pack.validity_days * 86_400_000),
      max_output_tokens: pack.max_output_tokens,
      requests_per_minute: pack.requests_per_minute,
      concurrency: pack.concurrency,
      cause,
      idempotency_key: `order:${grant.orderId}`,
      weighted: pack.counts === 'weighted',
    }));
  if (grant.bonusCredits > 0n) {
    await repository.changeCredit(trx, grant.accountId, grant.bonusCredits, 'grant', cause);
  }
  return { entitlementId };
}

/**
 * Takes back what is left of a refunded order's grant through the ledger (adjustment rows): the
 * entitlement's spendable tokens, and as much of the bonus credit as is still available. What
 * was used stays used; tokens held by calls in flight settle as usual, and the entitlement ends
 * now so whatever a release returns to it can no longer be spent.
 */
export async function clawBackOrderGrant(
  balances: BalanceChange,
  input: {
    orderId: string;
    accountId: string;
    entitlementId: string | null;
    bonusCredits: bigint;
    now: Date;
  },
): Promise<{ tokens: bigint; credits: bigint }> {
  const { trx } = balances;
  await balances.lock(input.accountId);
  const cause = `refund of order ${input.orderId}`;
  let tokens = 0n;
  if (input.entitlementId) {
    // The account lock serialises every balance change of the account: read, then zero.
    const row = await trx
      .selectFrom('entitlements')
      .select('remaining')
      .where('id', '=', input.entitlementId)
      .executeTakeFirstOrThrow();
    tokens = row.remaining;
    await trx
      .updateTable('entitlements')
      .set({ remaining: 0n, expires_at: sql<Date>`least(coalesce(expires_at, ${input.now}), ${input.now})` })
      .where('id', '=', input.entitlementId)
      .execute();
    if (tokens > 0n) {
      await trx
        .insertInto('ledger_entries')
        .values({
          account_id: input.accountId,
          entitlement_id: input.entitlementId,
          kind: 'adjustment',
          available_delta: -tokens,
          amount: -tokens,
          cause,
        })
        .execute();
    }
  }
  let credits = 0n;
  if (input.bonusCredits > 0n) {
    const balance = await trx
      .selectFrom('credit_balances')
      .select('available')
      .where('account_id', '=', input.accountId)
      .executeTakeFirstOrThrow();
    // biome-ignore lint/complexity/useMathMinMax: bigint operands; Math.min takes numbers
    credits = balance.available < input.bonusCredits ? balance.available : input.bonusCredits;
    if (credits > 0n) await repository.changeCredit(trx, input.accountId, -credits, 'adjustment', cause);
  }
  return { tokens, credits };
}
