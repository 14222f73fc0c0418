import { randomBytes, randomUUID } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import { QUANTITY_MAX } from '@tollgate/schemas';
import type { Selectable, Transaction } from 'kysely';
import type { PaymentProviderId } from '../../config.ts';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import { isUuid } from '../accounts/accounts.service.ts';
import { readBalance } from '../billing/reports.service.ts';
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
