import { randomBytes } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import { formatMoney, type Money } from '@tollgate/schemas';
import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import { isUuid } from '../accounts/accounts.service.ts';
import { findPackage } from '../catalog/catalog.service.ts';
import { type AdminCaller, writeAdminAudit } from '../orders/admin-audit.ts';
import { enforceThrottle, throttleKey } from '../throttle/throttle.service.ts';
import { checkApplicable, normalizeCode, type PackageRow, type PromotionRow, priceOf } from './pricing.ts';
import * as repository from './promotions.repository.ts';
import type { PromotionKind } from './promotions.table.ts';

export interface PromotionDefinition {
  /** Omitted: a random code no one can guess (`newPromotionCode`). */
  code?: string | undefined;
  kind: PromotionKind;
  percentOff?: number | undefined;
  amountOff?: Money | undefined;
  bonus?: bigint | undefined;
  minAmount?: Money | undefined;
  startsAt?: Date | undefined;
  endsAt?: Date | undefined;
  packageIds?: string[] | undefined;
  totalLimit?: number | undefined;
  perAccountLimit?: number | undefined;
  active?: boolean | undefined;
}

/** Who names a code: the account and the client address, each throttled. */
export interface CodeCaller {
  accountId: string;
  ip: string;
}

/**
 * Counts one request naming a promotion code, per account and per client address, before the
 * code is looked up: an unknown code answers differently from a known one, so without a bound
 * codes could be found by trying many. Over either limit: rate_limit_exceeded with Retry-After.
 */
export async function throttleCodeTries(deps: Dependencies, caller: CodeCaller): Promise<void> {
  const now = deps.clock.now();
  const { promotionCodePerAccount, promotionCodePerAddress } = deps.config.throttles;
  await enforceThrottle(
    deps.db,
    throttleKey('promotion-code-account', caller.accountId),
    promotionCodePerAccount,
    now,
  );
  await enforceThrottle(
    deps.db,
    throttleKey('promotion-code-address', caller.ip),
    promotionCodePerAddress,
    now,
  );
}

/** XXXX-XXXX-XXXX-XXXX from 32 unambiguous characters: 80 random bits. */
export function newPromotionCode(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  const chars = [...randomBytes(16)].map((byte) => alphabet[byte % alphabet.length]).join('');
  return chars.match(/.{4}/g)!.join('-');
}

/** Shows what a code does to a package's price for this account; reserves nothing. */
export async function previewPromotion(
  deps: Dependencies,
  caller: CodeCaller,
  input: { code: string; packageId: string },
) {
  const { accountId } = caller;
  await throttleCodeTries(deps, caller);
  const pack = await findPublishedPackage(deps, input.packageId);
  const promotion = await repository.findPromotionByCode(deps.db, normalizeCode(input.code));
  const uses = promotion ? await countUses(deps, promotion.id, accountId) : 0;
  checkApplicable(promotion, pack, { now: deps.clock.now(), accountUses: uses, field: 'code' });
  const pricing = priceOf(pack, promotion ?? null);
  const money = (amount: bigint) =>
    formatMoney({ amount, currency: pricing.currency, exponent: pricing.exponent });
  return {
    code: promotion!.code,
    packageId: pack.id,
    kind: promotion!.kind,
    priceBefore: money(pricing.listAmount),
    discount: money(pricing.discount),
    priceAfter: money(pricing.amount),
    bonusTokens: String(pricing.bonusTokens),
    bonusCredits: String(pricing.bonusCredits),
  };
}

async function countUses(deps: Dependencies, promotionId: string, accountId: string): Promise<number> {
  const row = await deps.db
    .selectFrom('promotion_redemptions')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('promotion_id', '=', promotionId)
    .where('account_id', '=', accountId)
    .where('status', 'in', ['held', 'consumed'])
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** A package a customer may buy: published; anything else is not_found. */
export async function findPublishedPackage(deps: Dependencies, packageId: string): Promise<PackageRow> {
  const pack = await findPackage(deps, packageId).catch(() => null);
  if (!pack?.published) throw new AppError('not_found', { message: `No package ${packageId}.` });
  return pack;
}

/**
 * Holds one redemption of the code for an order being created, inside its transaction: the
 * per-account count under a lock, then the guarded total-limit update.
 */
export async function holdPromotion(
  trx: Transaction<Database>,
  input: { code: string; pack: PackageRow; accountId: string; orderId: string; now: Date },
): Promise<PromotionRow> {
  const found = await repository.findPromotionByCode(trx, normalizeCode(input.code));
  const uses = found ? await repository.countAccountRedemptions(trx, found.id, input.accountId) : 0;
  const promotion = checkApplicable(found, input.pack, {
    now: input.now,
    accountUses: uses,
    field: 'promotionCode',
  });
  if (!(await repository.takeRedemption(trx, promotion.id))) {
    throw AppError.validation({ promotionCode: ['This code has been fully redeemed.'] });
  }
  return promotion;
}

export const returnPromotion = repository.returnRedemption;
export const consumePromotion = repository.consumeRedemption;
export const insertRedemption = repository.insertRedemption;

export async function createPromotion(
  deps: Dependencies,
  caller: AdminCaller,
  definition: PromotionDefinition,
) {
  const code = definition.code ? normalizeCode(definition.code) : newPromotionCode();
  const money = definition.amountOff ?? definition.minAmount;
  if (definition.amountOff && definition.minAmount) {
    if (
      definition.amountOff.currency !== definition.minAmount.currency ||
      definition.amountOff.exponent !== definition.minAmount.exponent
    )
      throw AppError.validation({ minAmount: ['Use the currency and exponent of amountOff.'] });
  }
  return deps.db.transaction().execute(async (trx) => {
    if (await repository.findPromotionByCode(trx, code))
      throw AppError.validation({ code: ['A promotion with this code exists.'] });
    const row = await repository.insertPromotion(trx, {
      code,
      kind: definition.kind,
      percent_off: definition.kind === 'percent_off' ? (definition.percentOff ?? null) : null,
      amount_off: definition.kind === 'amount_off' ? (definition.amountOff?.amount ?? null) : null,
      currency: money?.currency ?? null,
      exponent: money?.exponent ?? null,
      bonus:
        definition.kind === 'bonus_tokens' || definition.kind === 'bonus_credit'
          ? (definition.bonus ?? null)
          : null,
      min_amount: definition.minAmount?.amount ?? null,
      starts_at: definition.startsAt ?? null,
      ends_at: definition.endsAt ?? null,
      package_ids: definition.packageIds ?? null,
      total_limit: definition.totalLimit ?? null,
      per_account_limit: definition.perAccountLimit ?? null,
      active: definition.active ?? true,
    });
    await writeAdminAudit(trx, caller, 'promotion.create', { type: 'promotion', id: row.id }, { code });
    return row;
  });
}

export async function changePromotion(
  deps: Dependencies,
  caller: AdminCaller,
  id: string,
  changes: {
    active?: boolean;
    endsAt?: Date | null;
    totalLimit?: number | null;
    perAccountLimit?: number | null;
  },
) {
  if (!isUuid(id)) throw new AppError('not_found');
  return deps.db.transaction().execute(async (trx) => {
    const row = await repository
      .updatePromotion(trx, id, {
        ...(changes.active !== undefined ? { active: changes.active } : {}),
        ...(changes.endsAt !== undefined ? { ends_at: changes.endsAt } : {}),
        ...(changes.totalLimit !== undefined ? { total_limit: changes.totalLimit } : {}),
        ...(changes.perAccountLimit !== undefined ? { per_account_limit: changes.perAccountLimit } : {}),
      })
      .catch((error: unknown) => {
        // The table refuses a total limit below what is already held or consumed.
        if (String((error as { code?: string }).code) === '23514')
          throw AppError.validation({ totalLimit: ['Lower than the redemptions already taken.'] });
        throw error;
      });
    if (!row) throw new AppError('not_found');
    await writeAdminAudit(
      trx,
      caller,
      'promotion.update',
      { type: 'promotion', id },
      {
        ...changes,
        endsAt: changes.endsAt?.toISOString() ?? changes.endsAt,
      },
    );
    return row;
  });
}

export function listPromotions(
  deps: Dependencies,
  filter: { limit: number; after?: string; active?: boolean },
) {
  if (filter.after && !isUuid(filter.after))
    throw AppError.validation({ after: ['Not a cursor of this list.'] });
  return repository.listPromotions(deps.db, filter);
}
