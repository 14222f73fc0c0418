import type { ControlPlaneConfig } from '../../config.ts';
import { createDevelopmentProvider } from './development-provider.ts';
import { createManualProvider } from './manual-provider.ts';
import type { PaymentProviders } from './payment-provider.ts';
import { createStripeProvider } from './stripe-provider.ts';

/** The configured providers (PAYMENT_PROVIDERS), built from config. */
export function createPaymentProviders(config: ControlPlaneConfig): PaymentProviders {
  const providers: PaymentProviders = new Map();
  for (const id of config.commerce.providers) {
    if (id === 'development') providers.set(id, createDevelopmentProvider());
    if (id === 'manual') providers.set(id, createManualProvider());
    if (id === 'stripe') providers.set(id, createStripeProvider(config.commerce.stripe));
  }
  return providers;
}
