import { AppError } from '@tollgate/errors';
import type { Transaction } from 'kysely';
import { isOutOfRange } from '../../db/errors.ts';
import type { Database } from '../../db/schema.ts';
import { balanceTooLarge } from './billing.service.ts';
import { changeCredit, insertEntitlement } from './ledger.repository.ts';

/**
 * Transfers between two accounts (a reseller handing its own holdings to a customer). Both sides
 * are ledger rows in the caller's transaction: the giver's balance falls by a guarded update
 * (never below zero), the receiver's rises by the same amount, so verify-ledger stays consistent.
 */

/** Moves credit; insufficient_credits when the giver holds less than `amount`. Both locked. */
export async function transferCredit(
  trx: Transaction<Database>,
  input: { from: string; to: string; amount: bigint; cause: string },
): Promise<void> {
  try {
    await changeCredit(trx, input.from, -input.amount, 'adjustment', input.cause);
  } catch (error) {
    if (error instanceof RangeError) throw new AppError('insufficient_credits');
    throw error;
  }
  await changeCredit(trx, input.to, input.amount, 'grant', input.cause).catch((error: unknown) => {
    // The caller's transaction rolls back the giver's side too.
    throw isOutOfRange(error) ? balanceTooLarge('credits') : error;
  });
}

/**
 * Moves `tokens` of a package from the giver's usable entitlements of that package (soonest
 * expiry first, across several if needed) into one new entitlement of the receiver, with the
 * covered aliases and ceilings of the first entitlement drawn and the soonest expiry among those
 * drawn (a grant never outlives what was held). insufficient_tokens when the giver holds less.
 * Both accounts locked.
 */
export async function transferPackageTokens(
  trx: Transaction<Database>,
  input: { from: string; to: string; packageId: string; tokens: bigint; now: Date; cause: string },
): Promise<{ entitlementId: string; expiresAt: Date | null }> {
  const sources = await trx
    .selectFrom('entitlements')
    .selectAll()
    .where('account_id', '=', input.from)
    .where('package_id', '=', input.packageId)
    .where('remaining', '>', 0n)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', input.now)]))
    .orderBy('expires_at', (order) => order.asc().nullsLast())
    .orderBy('created_at')
    .orderBy('id')
    .forUpdate()
    .execute();
  const held = sources.reduce((sum, row) => sum + row.remaining, 0n);
  const first = sources[0];
  if (!first || held < input.tokens) throw new AppError('insufficient_tokens');

  let left = input.tokens;
  let expiresAt: Date | null = null;
  for (const source of sources) {
    if (left === 0n) break;
    // biome-ignore lint/complexity/useMathMinMax: bigints (Math.min takes numbers)
    const take = source.remaining < left ? source.remaining : left;
    const updated = await trx
      .updateTable('entitlements')
      .set((eb) => ({ remaining: eb('remaining', '-', take) }))
      .where('id', '=', source.id)
      .where('remaining', '>=', take)
      .executeTakeFirst();
    if (updated.numUpdatedRows !== 1n) throw new AppError('insufficient_tokens');
    await trx
      .insertInto('ledger_entries')
      .values({
        account_id: input.from,
        entitlement_id: source.id,
        kind: 'adjustment',
        available_delta: -take,
        amount: -take,
        cause: input.cause,
      })
      .execute();
    if (source.expires_at && (!expiresAt || source.expires_at < expiresAt)) expiresAt = source.expires_at;
    left -= take;
  }
  const entitlementId = await insertEntitlement(trx, {
    account_id: input.to,
    package_id: input.packageId,
    aliases: first.aliases,
    granted: input.tokens,
    expires_at: expiresAt,
    max_output_tokens: first.max_output_tokens,
    requests_per_minute: first.requests_per_minute,
    concurrency: first.concurrency,
    cause: input.cause,
    idempotency_key: null,
    // One package's entitlements all count alike (R2b).
    weighted: first.weighted,
  });
  return { entitlementId, expiresAt };
}
