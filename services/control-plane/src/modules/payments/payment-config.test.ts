import { ConfigError } from '@tollgate/service-kit';
import { testSecrets } from '@tollgate/test-harness';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.ts';
import { createPaymentProviders } from './payment-providers.ts';

const load = (env: Record<string, string>) => loadConfig({ ...testSecrets(), ...env });

describe('PAYMENT_PROVIDERS', () => {
  it('defaults to the development provider on a machine without a public https URL', () => {
    const config = load({});
    expect(config.commerce.providers).toEqual(['development']);
    expect([...createPaymentProviders(config).keys()]).toEqual(['development']);
  });

  it('refuses the development provider when PUBLIC_URL is https, and defaults to manual there', () => {
    expect(() => load({ PUBLIC_URL: 'https://gate.example.com', PAYMENT_PROVIDERS: 'development' })).toThrow(
      ConfigError,
    );
    expect(load({ PUBLIC_URL: 'https://gate.example.com' }).commerce.providers).toEqual(['manual']);
  });

  it('needs both Stripe secrets for stripe and refuses unknown names', () => {
    expect(() => load({ PAYMENT_PROVIDERS: 'stripe', STRIPE_SECRET_KEY: 'sk_test_x' })).toThrow(
      /STRIPE_WEBHOOK_SECRET/,
    );
    expect(() => load({ PAYMENT_PROVIDERS: 'paypal' })).toThrow(/unknown provider paypal/);
    const config = load({
      PAYMENT_PROVIDERS: 'stripe, manual',
      STRIPE_SECRET_KEY: 'sk',
      STRIPE_WEBHOOK_SECRET: 'wh',
    });
    expect(config.commerce.providers).toEqual(['stripe', 'manual']);
  });
});
