import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import { balancesIn } from '../billing/engines.ts';
import { grantOrderInTransaction } from '../billing/order-grants.ts';
import { findPackage } from '../catalog/catalog.service.ts';
import { findPaymentOfOrder, markPayment } from '../payments/payments.service.ts';
import { consumePromotion, returnPromotion } from '../promotions/promotions.service.ts';
import * as repository from './orders.repository.ts';

export type SettleSource = 'verify' | 'webhook' | 'reconciler' | 'admin' | 'auto_top_up';

export type SettleOutcome =
  | { outcome: 'paid'; replay: boolean }
  | { outcome: 'refunded'; replay: boolean }
  | { outcome: 'mismatch'; replay: false }
  | { outcome: 'not_payable'; status: string; replay: false };

type AuditHook = (trx: Transaction<Database>) => Promise<void>;
/** Pays the money back at the provider (with an idempotency key), inside the order lock. */
type RefundHook = (trx: Transaction<Database>) => Promise<{ reference: string }>;

/**
 * The one place an order becomes paid. Verify, webhook, reconciler and admin may all call it for
 * the same payment, any number of times and at once: the order row lock serialises them, the first
 * grants (in this transaction, with its ledger rows) and every later one sees `paid` and grants
 * nothing. The provider's amount and currency must equal the order's, else nothing is granted.
 * A late payment whose promotion redemption can no longer be taken again within the code's
 * limits is paid back through `refundLate` and grants nothing (docs/decisions/late-payment-promotion.md).
 */
export async function settleSucceeded(
  deps: Dependencies,
  orderId: string,
  paid: { amount: bigint; currency: string },
  source: SettleSource,
  options: { audit?: AuditHook; refundLate?: RefundHook } = {},
): Promise<SettleOutcome> {
  const { audit, refundLate } = options;
  const now = deps.clock.now();
  // Read before the transaction: the embedded database has one connection, held by the transaction.
  const unlocked = await repository.findOrder(deps.db, orderId);
  if (!unlocked) return { outcome: 'not_payable', status: 'missing', replay: false };
  const pack = unlocked.package_id === null ? null : await findPackage(deps, unlocked.package_id);
  const result = await deps.db
    .transaction()
    .execute(async (trx): Promise<SettleOutcome & { accountId?: string }> => {
      const order = await repository.lockOrder(trx, orderId);
      if (!order) return { outcome: 'not_payable', status: 'missing', replay: false };
      if (order.status === 'paid' || order.status === 'refunded') return { outcome: 'paid', replay: true };
      // An admin confirms a manual payment of a pending order only: a cancelled, expired or
      // rejected one has returned its promotion hold and may have been bought again.
      if (order.status !== 'pending' && source === 'admin')
        return { outcome: 'not_payable', status: order.status, replay: false };
      if (order.status !== 'pending' && (await findPaymentOfOrder(trx, orderId))?.status === 'refunded')
        return { outcome: 'refunded', replay: true };
      if (paid.amount !== order.amount || paid.currency !== order.currency) {
        await markPayment(trx, orderId, {
          status: 'failed',
          failure_reason: 'amount_mismatch',
          checked_at: now,
        });
        return { outcome: 'mismatch', replay: false };
      }
      // A payment the customer made at the provider that arrives after the order expired, was
      // cancelled or failed is still honoured: money received is never ignored. Its promotion
      // hold was returned when the order closed; it is taken again only within the code's limits,
      // else the payment goes back to the customer, so a limit never counts more than it allows.
      if (order.promotion_id && !(await consumePromotion(trx, orderId))) {
        if (!refundLate) return { outcome: 'not_payable', status: order.status, replay: false };
        const refund = await refundLate(trx);
        await markPayment(trx, orderId, {
          status: 'refunded',
          failure_reason: 'promotion_unavailable',
          refund_reference: refund.reference,
          checked_at: now,
        });
        return { outcome: 'refunded', replay: false };
      }
      const { entitlementId } = await grantOrderInTransaction(balancesIn(deps, trx), {
        orderId,
        accountId: order.account_id,
        pack,
        tokens: order.tokens + order.bonus_tokens,
        bonusCredits: order.credits + order.bonus_credits,
        now,
      });
      await repository.updateOrder(trx, orderId, {
        status: 'paid',
        entitlement_id: entitlementId,
        paid_at: now,
        closed_at: null,
      });
      await markPayment(trx, orderId, { status: 'succeeded', failure_reason: null, checked_at: now });
      await audit?.(trx);
      return { outcome: 'paid', replay: false, accountId: order.account_id };
    });
  if (result.outcome === 'paid' && !result.replay) {
    deps.logger.info({ orderId, source }, 'order paid');
    if (result.accountId) await deps.events.publish({ type: 'account.changed', accountId: result.accountId });
  }
  if (result.outcome === 'refunded' && !result.replay) {
    deps.logger.warn(
      { orderId, source },
      'late payment refunded: the promotion of the closed order is no longer available',
    );
  }
  if (result.outcome === 'mismatch') {
    deps.logger.warn(
      { orderId, source },
      'payment amount or currency differs from the order; nothing granted',
    );
  }
  const { accountId: _accountId, ...outcome } = result as SettleOutcome & { accountId?: string };
  return outcome as SettleOutcome;
}

/**
 * A pending order ends without payment: failed (the provider said so, or an admin rejected it),
 * expired (its time ran out) or cancelled (by the customer). Its promotion hold is returned.
 * `release`, under the order lock, ends what the customer could still pay at the provider and
 * says whether the order may close. Returns false when the order was no longer pending or was
 * not released.
 */
export async function closeUnpaid(
  deps: Dependencies,
  orderId: string,
  status: 'failed' | 'expired' | 'cancelled',
  reason: string,
  options: { audit?: AuditHook; release?: (trx: Transaction<Database>) => Promise<boolean> } = {},
): Promise<boolean> {
  const { audit, release } = options;
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const order = await repository.lockOrder(trx, orderId);
    if (order?.status !== 'pending') return false;
    if (release && !(await release(trx))) return false;
    await repository.updateOrder(trx, orderId, { status, closed_at: now });
    await markPayment(trx, orderId, { status: 'failed', failure_reason: reason, checked_at: now });
    if (order.promotion_id) await returnPromotion(trx, orderId);
    await audit?.(trx);
    return true;
  });
}
