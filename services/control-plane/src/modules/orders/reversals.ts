import type { Dependencies } from '../../deps.ts';
import { suspendForDispute } from '../accounts/accounts.service.ts';
import { recordServiceAudit } from '../audit/audit.service.ts';
import { balancesIn } from '../billing/engines.ts';
import { clawBackOrderGrant } from '../billing/order-grants.ts';
import type { PaymentReversal } from '../payments/payment-provider.ts';
import { markPayment } from '../payments/payments.service.ts';
import * as repository from './orders.repository.ts';

const AUDIT_ACTIONS: Record<PaymentReversal['kind'], string> = {
  refund: 'order.refunded_at_provider',
  partial_refund: 'order.partially_refunded_at_provider',
  dispute_opened: 'order.dispute_opened',
  dispute_closed: 'order.dispute_closed',
};

/**
 * Money of an order taken back at the provider, outside this service: a refund made in Stripe's
 * dashboard, or a dispute (chargeback) the payer opened. A full refund or an opened dispute takes
 * back what is unused of what the order granted, through the ledger as an admin refund does, and
 * the order shows it as refunded; an opened dispute first suspends the account, so nothing else
 * it holds is spent while the dispute is open (an admin reinstates it). A partial refund and a
 * closed dispute change nothing by themselves. Each is written to the audit log for the admins
 * (no actor: the provider said so), except a refund of an order already refunded here. Safe to
 * repeat. Returns the webhook's outcome.
 */
export async function reverseOrder(
  deps: Dependencies,
  orderId: string,
  reversal: PaymentReversal,
): Promise<'refunded' | 'disputed' | 'reported' | 'unchanged'> {
  const found = await repository.findOrder(deps.db, orderId);
  if (!found) return 'unchanged';
  if (reversal.kind === 'dispute_opened') {
    await suspendForDispute(deps, found.account_id, (trx) =>
      recordServiceAudit(trx, {
        action: 'account.suspended_for_dispute',
        targetType: 'account',
        targetId: found.account_id,
        detail: { orderId, reference: reversal.reference },
      }),
    );
  }
  const takesBack = reversal.kind === 'refund' || reversal.kind === 'dispute_opened';
  const now = deps.clock.now();
  const taken = await deps.db.transaction().execute(async (trx) => {
    const order = await repository.lockOrder(trx, orderId);
    if (!order) return null;
    let back: { tokens: bigint; credits: bigint } | null = null;
    if (takesBack && order.status === 'paid') {
      back = await clawBackOrderGrant(balancesIn(deps, trx), {
        orderId,
        accountId: order.account_id,
        entitlementId: order.entitlement_id,
        bonusCredits: order.credits + order.bonus_credits,
        now,
      });
      await repository.updateOrder(trx, orderId, {
        status: 'refunded',
        closed_at: now,
        refunded_tokens: back.tokens,
        refunded_credits: back.credits,
      });
      await markPayment(trx, orderId, {
        status: 'refunded',
        failure_reason: reversal.kind === 'dispute_opened' ? 'disputed' : 'refunded_at_provider',
        refund_reference: reversal.reference,
      });
    }
    // The refund of an order refunded here already (an admin's, or a late payment's) is that
    // refund's own echo: nothing to report.
    if (reversal.kind === 'refund' && !back) return null;
    await recordServiceAudit(trx, {
      action: AUDIT_ACTIONS[reversal.kind],
      targetType: 'order',
      targetId: orderId,
      detail: {
        accountId: order.account_id,
        reference: reversal.reference,
        detail: reversal.detail,
        tokensTakenBack: back ? String(back.tokens) : null,
        creditsTakenBack: back ? String(back.credits) : null,
        accountSuspended: reversal.kind === 'dispute_opened',
      },
    });
    return back;
  });
  if (reversal.kind === 'refund' && !taken) return 'unchanged';
  if (taken || reversal.kind === 'dispute_opened')
    await deps.events.publish({ type: 'account.changed', accountId: found.account_id });
  deps.logger.warn(
    { orderId, accountId: found.account_id, kind: reversal.kind },
    reversal.kind === 'dispute_opened'
      ? 'payment disputed: account suspended and the unused grant taken back; see the audit log'
      : 'payment reversed at the provider; see the audit log',
  );
  if (reversal.kind === 'dispute_opened') return 'disputed';
  return reversal.kind === 'refund' ? 'refunded' : 'reported';
}
