import { startPeriodic } from '@tollgate/service-kit';
import type { Dependencies } from '../../deps.ts';
import { listOverdueOrders } from '../orders/orders.service.ts';
import { applyCheck, closeAtProvider } from './payment-flows.service.ts';
import { createPaymentProviders } from './payment-providers.ts';
import * as repository from './payments.repository.ts';

export interface PaymentReconcileResult {
  checked: number;
  paid: number;
  failed: number;
  expired: number;
}

const BATCH = 100;

/**
 * One pass: asks the providers again about pending payments (so a lost webhook never loses a
 * paid order), then expires pending orders past their time, returning their promotion holds.
 * An overdue order's payment is asked about first, so an order paid at the last moment is paid.
 */
export async function reconcilePaymentsOnce(deps: Dependencies): Promise<PaymentReconcileResult> {
  const now = deps.clock.now();
  const providers = createPaymentProviders(deps.config);
  // Only providers the customer pays on their own can change state without us.
  const askable = [...providers.values()].filter((provider) => provider.nextStep === 'redirect');
  const result: PaymentReconcileResult = { checked: 0, paid: 0, failed: 0, expired: 0 };

  const overdue = await listOverdueOrders(deps, BATCH);
  const due = await repository.listPaymentsToRecheck(
    deps.db,
    askable.map((provider) => provider.id),
    new Date(now.getTime() - deps.config.commerce.recheckMs),
    BATCH,
  );
  const overduePayments = await repository.findPayments(
    deps.db,
    overdue.map((order) => order.id),
  );
  const toAsk = new Map(
    [...due, ...overduePayments].filter((p) => p.status === 'pending').map((p) => [p.order_id, p]),
  );
  for (const payment of toAsk.values()) {
    const provider = providers.get(payment.provider as never);
    if (provider?.nextStep !== 'redirect') continue;
    await repository.updatePayment(deps.db, payment.order_id, { checked_at: now });
    try {
      const check = await provider.check({
        orderId: payment.order_id,
        providerPaymentId: payment.provider_payment_id,
        amount: payment.amount,
        currency: payment.currency,
      });
      result.checked += 1;
      const outcome = await applyCheck(deps, payment.order_id, check, 'reconciler');
      if (outcome === 'paid') result.paid += 1;
      if (outcome === 'failed') result.failed += 1;
    } catch (error) {
      deps.logger.warn(
        { err: error, orderId: payment.order_id },
        'payment recheck failed; retried next pass',
      );
    }
  }
  for (const order of overdue) {
    try {
      const closed = await closeAtProvider(deps, order.id, 'expired', 'reconciler');
      if (closed === 'closed') result.expired += 1;
      if (closed === 'paid') result.paid += 1;
    } catch (error) {
      // The session could not be expired at the provider: the order stays pending (its hold
      // too) and the next pass tries again.
      deps.logger.warn({ err: error, orderId: order.id }, 'overdue order not expired; retried next pass');
    }
  }
  if (result.checked + result.expired > 0) deps.logger.info(result, 'reconciled payments and orders');
  return result;
}

/** Runs a pass every RECONCILE_INTERVAL_SECONDS until stopped; a failed pass is logged. */
export function startPaymentReconciler(deps: Dependencies): { stop(): void } {
  return startPeriodic({
    intervalMs: deps.config.billing.reconcileIntervalMs,
    logger: deps.logger,
    failure: 'payment reconciler pass failed',
    pass: () => reconcilePaymentsOnce(deps),
  });
}
