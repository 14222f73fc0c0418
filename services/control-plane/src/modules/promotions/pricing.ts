import { AppError } from '@tollgate/errors';
import { QUANTITY_MAX } from '@tollgate/schemas';
import type { Selectable } from 'kysely';
import type { PackagesTable } from '../catalog/catalog.table.ts';
import type { PromotionsTable } from './promotions.table.ts';

export type PromotionRow = Selectable<PromotionsTable>;
export type PackageRow = Selectable<PackagesTable>;

/** An order's price, fixed at creation. */
export interface Pricing {
  listAmount: bigint;
  discount: bigint;
  amount: bigint;
  currency: string;
  exponent: number;
  tokens: bigint;
  bonusTokens: bigint;
  bonusCredits: bigint;
}

/**
 * The price of a package with an optional promotion. A percent discount is rounded DOWN to a
 * whole minor unit (the customer pays the rounded-up remainder): 15% of 999 JPY is 149 JPY off.
 * An amount off never exceeds the price.
 */
export function priceOf(pack: PackageRow, promotion: PromotionRow | null): Pricing {
  const listAmount = pack.price_amount;
  let discount = 0n;
  let bonusTokens = 0n;
  let bonusCredits = 0n;
  if (promotion?.kind === 'percent_off') discount = (listAmount * BigInt(promotion.percent_off ?? 0)) / 100n;
  if (promotion?.kind === 'amount_off') {
    const off = promotion.amount_off ?? 0n;
    discount = off < listAmount ? off : listAmount;
  }
  if (promotion?.kind === 'bonus_tokens') bonusTokens = promotion.bonus ?? 0n;
  if (promotion?.kind === 'bonus_credit') bonusCredits = promotion.bonus ?? 0n;
  return {
    listAmount,
    discount,
    amount: listAmount - discount,
    currency: pack.price_currency,
    exponent: pack.price_exponent,
    tokens: pack.tokens,
    bonusTokens,
    bonusCredits,
  };
}

/**
 * Whether a promotion applies to this package now, for this account's count of uses; throws
 * validation_failed on `field` with the reason. Counts are re-checked under lock when held.
 */
export function checkApplicable(
  promotion: PromotionRow | undefined,
  pack: PackageRow,
  context: { now: Date; accountUses: number; field: string },
): PromotionRow {
  const refuse = (reason: string): never => {
    throw AppError.validation({ [context.field]: [reason] });
  };
  if (!promotion?.active) return refuse('This code does not exist or is no longer active.');
  if (promotion.starts_at && context.now < promotion.starts_at) return refuse('This code is not valid yet.');
  if (promotion.ends_at && context.now >= promotion.ends_at) return refuse('This code has expired.');
  if (promotion.package_ids && !promotion.package_ids.includes(pack.id))
    return refuse('This code does not apply to this package.');
  if (
    promotion.currency &&
    (promotion.currency !== pack.price_currency || promotion.exponent !== pack.price_exponent)
  )
    // The currency belongs to the amount off or to the minimum price: say which, so a percent
    // code with a minimum does not read as a code for one currency.
    return refuse(
      promotion.kind === 'amount_off'
        ? `This code takes an amount in ${promotion.currency} off: it applies only to packages priced in ${promotion.currency}.`
        : `This code has a minimum price in ${promotion.currency}: it applies only to packages priced in ${promotion.currency}.`,
    );
  if (promotion.min_amount !== null && pack.price_amount < promotion.min_amount)
    return refuse('The price is below the minimum amount of this code.');
  // An entitlement holds at most QUANTITY_MAX tokens: an order past it could never be granted.
  if (promotion.kind === 'bonus_tokens' && pack.tokens + (promotion.bonus ?? 0n) > QUANTITY_MAX)
    return refuse('The bonus of this code is too large for this package.');
  if (promotion.total_limit !== null && promotion.held >= promotion.total_limit)
    return refuse('This code has been fully redeemed.');
  if (promotion.per_account_limit !== null && context.accountUses >= promotion.per_account_limit)
    return refuse('You have already used this code.');
  return promotion;
}

/** Codes are case-insensitive: stored and looked up upper-case. */
export function normalizeCode(code: string): string {
  return code.trim().toUpperCase();
}
