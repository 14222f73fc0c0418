import { AppError } from '@tollgate/errors';
import type { Transaction } from 'kysely';
import type { PaymentProviderId } from '../../config.ts';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import { findPackage } from '../catalog/catalog.service.ts';
import { lockOrder, type OrderWithPayment, readAnyOrder, readOwnOrder } from '../orders/orders.service.ts';
import { reverseOrder } from '../orders/reversals.ts';
import { closeUnpaid, type SettleSource, settleSucceeded } from '../orders/settlement.ts';
import { saveCard } from '../top-ups/top-ups.repository.ts';
import type { PaymentCheck, PaymentProvider, SavedPaymentMethod } from './payment-provider.ts';
import { createPaymentProviders } from './payment-providers.ts';
import * as repository from './payments.repository.ts';

/** How long a client waits before asking again about a pending payment. */
const PENDING_RETRY_AFTER_SECONDS = 5;

export function providerOf(deps: Dependencies, id: string): PaymentProvider {
  const provider = createPaymentProviders(deps.config).get(id as PaymentProviderId);
  // An order made with a provider since removed from PAYMENT_PROVIDERS cannot be paid any more.
  if (!provider) throw AppError.validation({ provider: [`The payment provider ${id} is not available.`] });
  return provider;
}

function returnUrlOf(deps: Dependencies, orderId: string): string {
  const base = deps.config.publicUrl ?? `http://127.0.0.1:${deps.config.port}`;
  return `${base.replace(/\/$/, '')}/orders/${orderId}`;
}

/**
 * Starts paying a pending order with its provider, once: a repeat returns the payment already
 * started. The order row is locked while the provider is asked, so two starts never open two
 * provider payments.
 */
export async function startPayment(
  deps: Dependencies,
  accountId: string,
  orderId: string,
): Promise<OrderWithPayment> {
  const { order, payment } = await readOwnOrder(deps, accountId, orderId);
  if (payment) return { order, payment };
  if (order.status !== 'pending')
    throw AppError.validation({ status: [`An order that is ${order.status} cannot be paid.`] });
  const provider = providerOf(deps, order.provider);
  if (order.amount > BigInt(Number.MAX_SAFE_INTEGER) && provider.id === 'stripe')
    throw AppError.validation({ amount: ['This amount is too large for the payment provider.'] });
  // Read before the transaction: the embedded database has one connection, held by the transaction.
  const pack = order.package_id === null ? null : await findPackage(deps, order.package_id).catch(() => null);
  await deps.db.transaction().execute(async (trx) => {
    const locked = await lockOrder(trx, orderId);
    if (locked?.status !== 'pending') return;
    if (await repository.findPayment(trx, orderId)) return;
    const started = await provider.start({
      orderId,
      reference: locked.reference,
      description: pack?.name ?? locked.package_id ?? 'Credit top-up',
      savePaymentMethod: locked.save_payment_method,
      amount: locked.amount,
      currency: locked.currency,
      exponent: locked.exponent,
      returnUrl: returnUrlOf(deps, orderId),
    });
    await repository.insertPayment(trx, {
      order_id: orderId,
      provider: provider.id,
      status: 'pending',
      provider_payment_id: started.providerPaymentId,
      redirect_url: started.redirectUrl,
      amount: locked.amount,
      currency: locked.currency,
      exponent: locked.exponent,
    });
  });
  return readOwnOrder(deps, accountId, orderId);
}

export async function readPayment(
  deps: Dependencies,
  accountId: string,
  orderId: string,
): Promise<OrderWithPayment> {
  const found = await readOwnOrder(deps, accountId, orderId);
  if (!found.payment) throw new AppError('not_found', { message: 'No payment was started for this order.' });
  return found;
}

/**
 * Asks the provider again. Paid: the order (granted exactly once, however often this runs).
 * Not confirmed yet: payment_pending (402, Retry-After). Failed, expired or an amount/currency
 * that differs from the order: payment_verification_failed.
 */
export async function verifyPayment(
  deps: Dependencies,
  accountId: string,
  orderId: string,
): Promise<OrderWithPayment> {
  const found = await readOwnOrder(deps, accountId, orderId);
  const { order, payment } = found;
  if (order.status === 'paid' || order.status === 'refunded') return found;
  if (!payment)
    throw AppError.validation({ payment: ['Start the payment first (POST /orders/{id}/payment).'] });
  const provider = providerOf(deps, payment.provider);
  // Only a provider the customer pays by themselves can still turn up a late payment.
  if (order.status !== 'pending' && provider.nextStep !== 'redirect')
    throw verificationFailed(payment.failure_reason ?? order.status);
  const check = await checkWithProvider(deps, provider, payment);
  await applyCheck(deps, orderId, check, 'verify');
  const after = await readOwnOrder(deps, accountId, orderId);
  if (after.order.status === 'paid' || after.order.status === 'refunded') return after;
  if (check.state === 'pending' && after.order.status === 'pending') {
    throw new AppError('payment_pending', { retryAfterSeconds: PENDING_RETRY_AFTER_SECONDS });
  }
  throw verificationFailed(after.payment?.failure_reason ?? null);
}

function verificationFailed(reason: string | null): AppError {
  const messages: Record<string, string> = {
    amount_mismatch: 'The amount or currency paid differs from the order.',
    expired: 'The payment session expired without payment.',
    payment_failed: 'The payment failed.',
    rejected: 'The payment was rejected.',
    cancelled: 'The order was cancelled.',
    promotion_unavailable:
      'The payment arrived after the order had closed, when its promotion code could no longer be used; it was refunded.',
  };
  return new AppError('payment_verification_failed', {
    message: (reason && messages[reason]) ?? 'The payment could not be verified.',
  });
}

async function checkWithProvider(
  deps: Dependencies,
  provider: PaymentProvider,
  payment: { order_id: string; provider_payment_id: string | null; amount: bigint; currency: string },
): Promise<PaymentCheck> {
  try {
    return await provider.check({
      orderId: payment.order_id,
      providerPaymentId: payment.provider_payment_id,
      amount: payment.amount,
      currency: payment.currency,
    });
  } catch (error) {
    // The provider could not be asked: the payment is as pending as before; the reconciler retries.
    deps.logger.warn(
      { err: error, orderId: payment.order_id, provider: provider.id },
      'payment check failed',
    );
    return { state: 'pending' };
  }
}

/**
 * What any source learned about a payment, applied through the one settlement path. The outcome
 * (recorded with a webhook's event): paid, already_paid, refunded (a late payment past its
 * promotion's limits), mismatch, not_payable, failed, unchanged (a failure of an order no longer
 * pending) or pending.
 */
export async function applyCheck(
  deps: Dependencies,
  orderId: string,
  check: PaymentCheck,
  source: SettleSource,
) {
  if (check.state === 'succeeded') {
    const settled = await settleSucceeded(deps, orderId, check, source, {
      refundLate: (trx) => refundAtProvider(deps, trx, orderId),
    });
    if (settled.outcome === 'paid' && !settled.replay) await keepCard(deps, orderId);
    return settled.outcome === 'paid' && settled.replay ? 'already_paid' : settled.outcome;
  }
  // A failure reported for an order that is no longer pending (paid, or closed before) changes
  // nothing, and the label says so.
  if (check.state === 'failed')
    return (await closeUnpaid(deps, orderId, 'failed', check.reason)) ? 'failed' : 'unchanged';
  return 'pending';
}

/**
 * A paid top-up that asked to keep its card (savePaymentMethod): the card is saved for automatic
 * top-ups. The order is paid either way; a card Stripe did not keep is logged.
 */
async function keepCard(deps: Dependencies, orderId: string): Promise<void> {
  const { order, payment } = await readAnyOrder(deps, orderId);
  if (!order.save_payment_method || !payment) return;
  try {
    const method = await providerOf(deps, payment.provider).savedMethod?.({
      orderId,
      providerPaymentId: payment.provider_payment_id,
      amount: payment.amount,
      currency: payment.currency,
    });
    if (!method) throw new Error('the provider kept no card');
    await saveCard(deps.db, {
      accountId: order.account_id,
      customer: method.customer,
      paymentMethod: method.paymentMethod,
      amount: order.amount,
      currency: order.currency,
      exponent: order.exponent,
    });
  } catch (error) {
    deps.logger.warn({ err: error, orderId }, 'top-up paid, but its card was not kept for automatic top-ups');
  }
}

/**
 * Charges an automatic top-up order to the saved card, once: the provider's idempotency key is
 * the order's, the payment row is written with the provider's id, and what the provider answered
 * goes through the one settlement path (a webhook or the reconciler may confirm it later).
 */
export async function chargeSavedCard(
  deps: Dependencies,
  orderId: string,
  method: SavedPaymentMethod,
): Promise<string> {
  const { order } = await readAnyOrder(deps, orderId);
  const provider = providerOf(deps, order.provider);
  if (!provider.chargeSaved) throw new Error(`${provider.id} cannot charge a saved card`);
  const charged = await provider.chargeSaved({
    orderId,
    method,
    amount: order.amount,
    currency: order.currency,
    description: 'Automatic credit top-up',
  });
  await deps.db.transaction().execute(async (trx) => {
    const locked = await lockOrder(trx, orderId);
    if (!locked || (await repository.findPayment(trx, orderId))) return;
    await repository.insertPayment(trx, {
      order_id: orderId,
      provider: provider.id,
      status: 'pending',
      provider_payment_id: charged.providerPaymentId,
      redirect_url: null,
      amount: order.amount,
      currency: order.currency,
      exponent: order.exponent,
    });
  });
  return applyCheck(deps, orderId, charged.check, 'auto_top_up');
}

/** Pays an order's payment back at its provider, inside the caller's order lock. */
async function refundAtProvider(deps: Dependencies, trx: Transaction<Database>, orderId: string) {
  const payment = await repository.findPayment(trx, orderId);
  if (!payment) throw new Error(`no payment of order ${orderId} to refund`);
  return providerOf(deps, payment.provider).refund({
    orderId,
    providerPaymentId: payment.provider_payment_id,
    amount: payment.amount,
    currency: payment.currency,
  });
}

/**
 * Closes a pending order unpaid (cancelled by its customer, or expired). What the customer could
 * still pay at the provider (an open Stripe Checkout Session) is ended there first, under the
 * order lock, so the promotion hold never returns while a payment can still be made. A session
 * paid first pays the order instead; one whose payment is in progress keeps the order pending.
 * A provider that cannot be reached throws; the order stays pending.
 */
export async function closeAtProvider(
  deps: Dependencies,
  orderId: string,
  status: 'cancelled' | 'expired',
  source: SettleSource,
): Promise<'closed' | 'not_pending' | 'paid' | 'in_progress'> {
  let found: PaymentCheck | null = null;
  const closed = await closeUnpaid(deps, orderId, status, status, {
    release: async (trx) => {
      const payment = await repository.findPayment(trx, orderId);
      const provider = payment?.status === 'pending' ? providerOf(deps, payment.provider) : null;
      if (!payment || !provider?.expire) return true;
      found = await provider.expire({
        orderId,
        providerPaymentId: payment.provider_payment_id,
        amount: payment.amount,
        currency: payment.currency,
      });
      return found.state === 'failed';
    },
  });
  if (closed) return 'closed';
  const check = found as PaymentCheck | null;
  if (check?.state === 'succeeded') {
    await applyCheck(deps, orderId, check, source);
    return 'paid';
  }
  return check?.state === 'pending' ? 'in_progress' : 'not_pending';
}

/** The customer gives up a pending order; its promotion hold is returned. */
export async function cancelOrder(
  deps: Dependencies,
  accountId: string,
  orderId: string,
): Promise<OrderWithPayment> {
  const { order } = await readOwnOrder(deps, accountId, orderId);
  if (order.status !== 'pending')
    throw AppError.validation({ status: [`An order that is ${order.status} cannot be cancelled.`] });
  let result: Awaited<ReturnType<typeof closeAtProvider>>;
  try {
    result = await closeAtProvider(deps, orderId, 'cancelled', 'verify');
  } catch (error) {
    deps.logger.warn({ err: error, orderId }, 'order not cancelled: the payment provider could not be asked');
    throw new AppError(
      'server_error',
      { message: 'The payment provider could not be reached; the order is still pending. Retry later.' },
      503,
    );
  }
  if (result === 'in_progress')
    throw AppError.validation({ status: ['A payment of this order is in progress at the provider.'] });
  if (result !== 'closed') {
    const now = (await readOwnOrder(deps, accountId, orderId)).order.status;
    throw AppError.validation({ status: [`An order that is ${now} cannot be cancelled.`] });
  }
  return readOwnOrder(deps, accountId, orderId);
}

/**
 * A provider's webhook: signature verified over the raw body (a bad signature or an event older
 * than the tolerance is refused and logged), replays recognised by event id, the payment
 * matched by the provider's id, then the same settlement as verify.
 */
export async function receiveNotification(
  deps: Dependencies,
  providerId: string,
  rawBody: string,
  signature: string | undefined,
): Promise<{ received: true; outcome: string }> {
  const provider = createPaymentProviders(deps.config).get(providerId as PaymentProviderId);
  if (!provider?.readNotification) throw new AppError('not_found');
  let notification: Awaited<ReturnType<NonNullable<PaymentProvider['readNotification']>>>;
  try {
    notification = await provider.readNotification(rawBody, signature);
  } catch (error) {
    deps.logger.warn(
      { provider: providerId, reason: error instanceof Error ? error.message.slice(0, 200) : 'unreadable' },
      'payment webhook refused: signature not valid or event too old',
    );
    throw AppError.validation({ signature: ['The webhook signature could not be verified.'] });
  }
  const seen = await repository.findEvent(deps.db, providerId, notification.eventId);
  if (seen) {
    deps.logger.info(
      { provider: providerId, eventId: notification.eventId },
      'payment webhook replayed; ignored',
    );
    return { received: true, outcome: 'duplicate' };
  }
  let outcome = 'ignored';
  let orderId: string | null = null;
  if (notification.reversal) {
    const payment = notification.providerPaymentId
      ? await repository.findPaymentByProviderId(deps.db, providerId, notification.providerPaymentId)
      : undefined;
    if (!payment) {
      outcome = 'unknown_payment';
      deps.logger.warn(
        { provider: providerId, eventId: notification.eventId, type: notification.type },
        'payment webhook for no known payment',
      );
    } else {
      orderId = payment.order_id;
      outcome = await reverseOrder(deps, payment.order_id, notification.reversal);
    }
  } else if (notification.check && notification.providerPaymentId) {
    const payment = await repository.findPaymentByProviderId(
      deps.db,
      providerId,
      notification.providerPaymentId,
    );
    if (!payment || (notification.orderId && notification.orderId !== payment.order_id)) {
      outcome = 'unknown_payment';
      deps.logger.warn(
        { provider: providerId, eventId: notification.eventId },
        'payment webhook for no known payment',
      );
    } else {
      orderId = payment.order_id;
      outcome = await applyCheck(deps, payment.order_id, notification.check, 'webhook');
    }
  }
  await repository.recordEvent(deps.db, {
    provider: providerId,
    event_id: notification.eventId,
    type: notification.type,
    order_id: orderId,
    outcome,
  });
  return { received: true, outcome };
}
