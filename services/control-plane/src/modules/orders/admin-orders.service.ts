import { AppError } from '@tollgate/errors';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import { isUuid } from '../accounts/accounts.service.ts';
import { balancesIn } from '../billing/engines.ts';
import { clawBackOrderGrant } from '../billing/order-grants.ts';
import { providerOf } from '../payments/payment-flows.service.ts';
import { findPaymentOfOrder, markPayment } from '../payments/payments.service.ts';
import { type AdminCaller, writeAdminAudit } from './admin-audit.ts';
import * as repository from './orders.repository.ts';
import { type OrderWithPayment, readAnyOrder } from './orders.service.ts';
import { closeUnpaid, settleSucceeded } from './settlement.ts';

async function manualOrder(deps: Dependencies, id: string) {
  const found = await readAnyOrder(deps, id);
  if (found.order.provider !== 'manual')
    throw AppError.validation({ provider: ['Only manual payments are confirmed or rejected by hand.'] });
  return found;
}

/** An admin saw the bank transfer: the order is paid, for exactly its price, once. */
export async function confirmManualPayment(
  deps: Dependencies,
  caller: AdminCaller,
  id: string,
  note: string | undefined,
): Promise<OrderWithPayment> {
  const { order, payment } = await manualOrder(deps, id);
  if (!payment) throw AppError.validation({ payment: ['The customer has not started the payment.'] });
  if (order.status === 'refunded') throw AppError.validation({ status: ['This order was refunded.'] });
  const result = await settleSucceeded(
    deps,
    id,
    { amount: order.amount, currency: order.currency },
    'admin',
    {
      audit: (trx) =>
        writeAdminAudit(trx, caller, 'order.confirm_payment', { type: 'order', id }, { note: note ?? null }),
    },
  );
  if (result.outcome === 'not_payable')
    throw AppError.validation({ status: [`An order that is ${result.status} cannot be confirmed.`] });
  if (result.outcome !== 'paid') throw AppError.validation({ status: ['This order cannot be paid.'] });
  return readAnyOrder(deps, id);
}

/** An admin found no matching transfer: the order fails and its promotion hold is returned. */
export async function rejectManualPayment(
  deps: Dependencies,
  caller: AdminCaller,
  id: string,
  note: string | undefined,
): Promise<OrderWithPayment> {
  const { order } = await manualOrder(deps, id);
  const closed = await closeUnpaid(deps, id, 'failed', 'rejected', {
    audit: (trx) =>
      writeAdminAudit(trx, caller, 'order.reject_payment', { type: 'order', id }, { note: note ?? null }),
  });
  if (!closed)
    throw AppError.validation({ status: [`An order that is ${order.status} cannot be rejected.`] });
  return readAnyOrder(deps, id);
}

/**
 * Refunds a paid order: the provider's refund (Stripe) or a recorded manual one, and the unused
 * rest of what the order granted is taken back through the ledger. The provider is asked inside
 * the transaction holding the order lock, with an idempotency key, so a retry never refunds twice.
 */
export async function refundOrder(
  deps: Dependencies,
  caller: AdminCaller,
  id: string,
  note: string,
  idempotencyKey: string | null = null,
): Promise<OrderWithPayment> {
  // Order ids are uuids: anything else names no order (and must not reach a uuid column).
  if (!isUuid(id)) throw new AppError('not_found');
  const now = deps.clock.now();
  const accountId = await deps.db.transaction().execute(async (trx) => {
    const order = await repository.lockOrder(trx, id);
    if (!order) throw new AppError('not_found');
    // The same form sent twice: the first refund's answer again, nothing refunded twice.
    if (order.status === 'refunded' && idempotencyKey && (await refundedWithKey(trx, id, idempotencyKey)))
      return null;
    if (order.status !== 'paid')
      throw AppError.validation({ status: [`An order that is ${order.status} cannot be refunded.`] });
    const payment = await findPaymentOfOrder(trx, id);
    const refund = await providerOf(deps, order.provider).refund({
      orderId: id,
      providerPaymentId: payment?.provider_payment_id ?? null,
      amount: order.amount,
      currency: order.currency,
    });
    const taken = await clawBackOrderGrant(balancesIn(deps, trx), {
      orderId: id,
      accountId: order.account_id,
      entitlementId: order.entitlement_id,
      bonusCredits: order.credits + order.bonus_credits,
      now,
    });
    await repository.updateOrder(trx, id, {
      status: 'refunded',
      closed_at: now,
      refunded_tokens: taken.tokens,
      refunded_credits: taken.credits,
    });
    await markPayment(trx, id, { status: 'refunded', refund_reference: refund.reference });
    await writeAdminAudit(
      trx,
      caller,
      'order.refund',
      { type: 'order', id },
      {
        note,
        accountId: order.account_id,
        packageId: order.package_id,
        amount: String(order.amount),
        currency: order.currency,
        idempotencyKey,
        tokensTakenBack: String(taken.tokens),
        creditsTakenBack: String(taken.credits),
        refundReference: refund.reference,
      },
    );
    return order.account_id;
  });
  if (accountId === null) return readAnyOrder(deps, id);
  await deps.events.publish({ type: 'account.changed', accountId });
  deps.logger.info({ orderId: id }, 'order refunded');
  return readAnyOrder(deps, id);
}

async function refundedWithKey(trx: Transaction<Database>, orderId: string, key: string): Promise<boolean> {
  const row = await trx
    .selectFrom('audit_log')
    .select('id')
    .where('action', '=', 'order.refund')
    .where('target_id', '=', orderId)
    .where(sql<string>`detail->>'idempotencyKey'`, '=', key)
    .executeTakeFirst();
  return row !== undefined;
}
