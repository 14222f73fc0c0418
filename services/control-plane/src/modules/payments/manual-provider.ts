import type { PaymentProvider } from './payment-provider.ts';

/**
 * Bank transfer or invoice: the customer pays outside the system quoting the order reference,
 * and an admin confirms or rejects the payment. Until then it is pending.
 */
export function createManualProvider(): PaymentProvider {
  return {
    id: 'manual',
    nextStep: 'wait',
    async start() {
      return { providerPaymentId: null, redirectUrl: null };
    },
    async check() {
      return { state: 'pending' };
    },
    async refund(payment) {
      // Paid back outside the system, like the payment itself.
      return { reference: `manual_refund_${payment.orderId}` };
    },
  };
}
