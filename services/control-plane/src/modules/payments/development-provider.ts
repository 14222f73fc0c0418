import type { PaymentProvider } from './payment-provider.ts';

/**
 * The quick start's provider: every payment succeeds when verified, for exactly the order's
 * price. Refused at start when PUBLIC_URL is https (config.ts), so no public deployment runs it.
 */
export function createDevelopmentProvider(): PaymentProvider {
  return {
    id: 'development',
    nextStep: 'verify',
    async start(subject) {
      return { providerPaymentId: `dev_${subject.orderId}`, redirectUrl: null };
    },
    async check(payment) {
      return { state: 'succeeded', amount: payment.amount, currency: payment.currency };
    },
    async refund(payment) {
      return { reference: `dev_refund_${payment.orderId}` };
    },
  };
}
