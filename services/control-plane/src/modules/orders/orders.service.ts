import { randomBytes, randomUUID } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import { QUANTITY_MAX } from '@tollgate/schemas';
import type { Selectable, Transaction } from 'kysely';
import type { PaymentProviderId } from '../../config.ts';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import { isUuid } from '../accounts/accounts.service.ts';
import { readBalance } from '../billing/reports.service.ts';
import { type CreditSettings, readCreditSettings } from '../catalog/catalog.service.ts';
import { creditsForMinor } from '../catalog/credit-value.ts';
import { findPaymentOfOrder, findPaymentsOfOrders } from '../payments/payments.service.ts';
import type { PaymentsTable } from '../payments/payments.table.ts';
import { priceOf } from '../promotions/pricing.ts';
import {
  type CodeCaller,
  findPublishedPackage,
  holdPromotion,
  insertRedemption,
  throttleCodeTries,
} from '../promotions/promotions.service.ts';
import * as repository from './orders.repository.ts';
import type { OrdersTable } from './orders.table.ts';
import { settleSucceeded } from './settlement.ts';

export type OrderRow = Selectable<OrdersTable>;
export type PaymentRow = Selectable<PaymentsTable>;
export interface OrderWithPayment {
  order: OrderRow;
  payment: PaymentRow | null;
}

/** ABCD-EFGH-JKLM: what a customer quotes on a bank transfer (no 0/O/1/I to misread). */
function newReference(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  const bytes = randomBytes(12);
  const chars = [...bytes].map((byte) => alphabet[byte % alphabet.length]).join('');
  return `TG-${chars.slice(0, 4)}-${chars.slice(4, 8)}-${chars.slice(8, 12)}`;
}

/**
 * Creates a pending order with its price fixed now (package price, promotion, what it grants).
 * A promotion code holds one redemption in the same transaction. An order priced at zero is
 * paid at once through the same path as any payment.
 */
export async function createOrder(
  deps: Dependencies,
  caller: CodeCaller,
  input: { packageId: string; promotionCode?: string | undefined; provider?: PaymentProviderId | undefined },
): Promise<OrderWithPayment> {
  const { accountId } = caller;
  const providers = deps.config.commerce.providers;
  const provider = input.provider ?? providers[0]!;
  if (!providers.includes(provider))
    throw AppError.validation({ provider: [`Use one of: ${providers.join(', ')}.`] });
  if (input.promotionCode) await throttleCodeTries(deps, caller);
  const pack = await findPublishedPackage(deps, input.packageId);
  const now = deps.clock.now();
  const orderId = randomUUID();
  // Read before the transaction: the embedded database has one connection, held by the transaction.
  const credits = input.promotionCode ? await creditsHeld(deps, accountId) : 0n;
  const order = await deps.db.transaction().execute(async (trx) => {
    // Unpaid orders hold promotion redemptions: one account may not hold a whole promotion.
    const pendingLimit = deps.config.commerce.pendingOrdersPerAccount;
    if ((await repository.countPendingOrdersLocked(trx, accountId)) >= pendingLimit)
      throw AppError.validation({
        body: [`An account can hold at most ${pendingLimit} unpaid orders: pay or cancel one first.`],
      });
    const promotion = input.promotionCode
      ? await holdPromotion(trx, { code: input.promotionCode, pack, accountId, orderId, now })
      : null;
    const pricing = priceOf(pack, promotion);
    // The payment could never be granted: refused now rather than failing once paid.
    if (credits + pricing.bonusCredits > QUANTITY_MAX)
      throw AppError.validation({
        promotionCode: ['The bonus of this code is more credit than this account can hold.'],
      });
    const row = await repository.insertOrder(trx, {
      id: orderId,
      account_id: accountId,
      package_id: pack.id,
      status: 'pending',
      provider,
      list_amount: pricing.listAmount,
      discount_amount: pricing.discount,
      amount: pricing.amount,
      currency: pricing.currency,
      exponent: pricing.exponent,
      tokens: pricing.tokens,
      bonus_tokens: pricing.bonusTokens,
      bonus_credits: pricing.bonusCredits,
      promotion_id: promotion?.id ?? null,
      promotion_code: promotion?.code ?? null,
      reference: newReference(),
      expires_at: new Date(now.getTime() + deps.config.commerce.orderTtlMs),
    });
    if (promotion)
      await insertRedemption(trx, { order_id: orderId, promotion_id: promotion.id, account_id: accountId });
    return row;
  });
  if (order.amount === 0n) {
    await settleSucceeded(deps, order.id, { amount: 0n, currency: order.currency }, 'verify');
    return readAnyOrder(deps, order.id);
  }
  return { order, payment: null };
}

/**
 * A top-up: credit of any amount within the catalogue's bounds, bought through the same providers
 * and the same settlement as a package (docs/payments.md#top-ups). The credits are fixed now from
 * the credit value, rounded down to a whole credit.
 */
export async function createTopUp(
  deps: Dependencies,
  accountId: string,
  input: {
    amount: bigint;
    provider?: PaymentProviderId | undefined;
    savePaymentMethod?: boolean | undefined;
    idempotencyKey?: string | null | undefined;
  },
): Promise<OrderWithPayment> {
  const key = input.idempotencyKey ?? null;
  // The same form sent twice: the first order again, so a double submit never buys twice.
  if (key) {
    const first = await repository.findOrderByIdempotencyKey(deps.db, accountId, key);
    if (first) return sameTopUpOrConflict(deps, first, input.amount);
  }
  const providers = deps.config.commerce.providers;
  const provider = input.provider ?? providers[0]!;
  if (!providers.includes(provider))
    throw AppError.validation({ provider: [`Use one of: ${providers.join(', ')}.`] });
  if (input.savePaymentMethod && provider !== 'stripe')
    throw AppError.validation({ savePaymentMethod: ['Only a card paid through Stripe can be kept.'] });
  const settings = await readCreditSettings(deps);
  const credits = topUpCredits(settings, input.amount);
  const held = await creditsHeld(deps, accountId);
  if (held + credits > QUANTITY_MAX)
    throw AppError.validation({ amount: ['This top-up is more credit than this account can hold.'] });
  const order = await deps.db.transaction().execute(async (trx) => {
    const pendingLimit = deps.config.commerce.pendingOrdersPerAccount;
    if ((await repository.countPendingOrdersLocked(trx, accountId)) >= pendingLimit)
      throw AppError.validation({
        body: [`An account can hold at most ${pendingLimit} unpaid orders: pay or cancel one first.`],
      });
    if (key) {
      const first = await repository.findOrderByIdempotencyKey(trx, accountId, key);
      if (first) return first;
    }
    return insertTopUpOrder(deps, trx, {
      idempotencyKey: key,
      accountId,
      provider,
      amount: input.amount,
      credits,
      settings: settings!,
      savePaymentMethod: input.savePaymentMethod ?? false,
      autoTopUpGeneration: null,
    });
  });
  if (order.amount !== input.amount) return sameTopUpOrConflict(deps, order, input.amount);
  return { order, payment: (await findPaymentOfOrder(deps.db, order.id)) ?? null };
}

async function sameTopUpOrConflict(deps: Dependencies, order: OrderRow, amount: bigint) {
  if (order.kind !== 'top_up' || order.amount !== amount)
    throw AppError.validation({ 'Idempotency-Key': ['This key was already used with a different request.'] });
  return { order, payment: (await findPaymentOfOrder(deps.db, order.id)) ?? null };
}

/** The credits `amount` minor units buy, or validation_failed naming the bounds. */
export function topUpCredits(settings: CreditSettings | null, amount: bigint): bigint {
  if (!settings?.topUp) throw AppError.validation({ amount: ['Top-ups are not offered.'] });
  const { min, max } = settings.topUp;
  if (amount < min || amount > max) {
    const show = (value: bigint) => formatMinor(value, settings.exponent);
    throw AppError.validation({
      amount: [`Top up between ${show(min)} and ${show(max)} ${settings.currency}.`],
    });
  }
  return creditsForMinor(amount, settings.exponent, settings.value);
}

function formatMinor(value: bigint, exponent: number): string {
  if (exponent === 0) return String(value);
  const text = String(value).padStart(exponent + 1, '0');
  return `${text.slice(0, -exponent)}.${text.slice(-exponent)}`;
}

/** Inserts a pending top-up order inside the caller's transaction (auto top-up disarms in it). */
export function insertTopUpOrder(
  deps: Dependencies,
  trx: Transaction<Database>,
  input: {
    accountId: string;
    provider: PaymentProviderId;
    amount: bigint;
    credits: bigint;
    settings: CreditSettings;
    savePaymentMethod: boolean;
    autoTopUpGeneration: bigint | null;
    idempotencyKey?: string | null;
  },
): Promise<OrderRow> {
  const { amount, settings } = input;
  return repository.insertOrder(trx, {
    id: randomUUID(),
    account_id: input.accountId,
    package_id: null,
    kind: 'top_up',
    status: 'pending',
    provider: input.provider,
    list_amount: amount,
    discount_amount: 0n,
    amount,
    currency: settings.currency,
    exponent: settings.exponent,
    tokens: 0n,
    credits: input.credits,
    save_payment_method: input.savePaymentMethod,
    auto_top_up_generation: input.autoTopUpGeneration,
    idempotency_key: input.idempotencyKey ?? null,
    promotion_id: null,
    promotion_code: null,
    reference: newReference(),
    expires_at: new Date(deps.clock.now().getTime() + deps.config.commerce.orderTtlMs),
  });
}

/** Credit the account holds, spendable or reserved. */
async function creditsHeld(deps: Dependencies, accountId: string): Promise<bigint> {
  const balance = await readBalance(deps, accountId);
  return BigInt(balance.remaining.credits) + BigInt(balance.reserved.credits);
}

/** The caller's own order; another account's is not_found, never a hint that it exists. */
export async function readOwnOrder(
  deps: Dependencies,
  accountId: string,
  id: string,
): Promise<OrderWithPayment> {
  const order = isUuid(id) ? await repository.findOrder(deps.db, id) : undefined;
  if (!order || order.account_id !== accountId) throw new AppError('not_found');
  return { order, payment: (await findPaymentOfOrder(deps.db, id)) ?? null };
}

export async function readAnyOrder(deps: Dependencies, id: string): Promise<OrderWithPayment> {
  const order = isUuid(id) ? await repository.findOrder(deps.db, id) : undefined;
  if (!order) throw new AppError('not_found');
  return { order, payment: (await findPaymentOfOrder(deps.db, id)) ?? null };
}

export async function listOrders(
  deps: Dependencies,
  filter: repository.OrderFilter,
): Promise<{ items: OrderWithPayment[]; nextCursor: string | null }> {
  if (filter.after && !isUuid(filter.after))
    throw AppError.validation({ after: ['Not a cursor of this list.'] });
  if (filter.accountId && !isUuid(filter.accountId)) return { items: [], nextCursor: null };
  const rows = await repository.listOrders(deps.db, filter);
  const payments = new Map(
    (
      await findPaymentsOfOrders(
        deps.db,
        rows.map((row) => row.id),
      )
    ).map((p) => [p.order_id, p]),
  );
  return {
    items: rows.map((order) => ({ order, payment: payments.get(order.id) ?? null })),
    nextCursor: rows.length === filter.limit ? rows[rows.length - 1]!.id : null,
  };
}

/** The order row locked for the caller's transaction: every change of an order goes through it. */
export function lockOrder(trx: Transaction<Database>, id: string) {
  return repository.lockOrder(trx, id);
}

/** Pending orders past their time, oldest first. */
export function listOverdueOrders(deps: Dependencies, limit: number) {
  return repository.listOverduePending(deps.db, deps.clock.now(), limit);
}
