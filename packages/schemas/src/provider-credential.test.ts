import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PROVIDER_SECRET_PREFIX,
  ProviderSecretPrefix,
  providerCredentialProblem,
} from './provider-credential.ts';

describe('provider credential names', () => {
  it('accepts names inside the prefix only', () => {
    expect(
      providerCredentialProblem('TOLLGATE_PROVIDER_ANTHROPIC', DEFAULT_PROVIDER_SECRET_PREFIX),
    ).toBeNull();
    for (const name of ['HOME', 'GATEWAY_PORT', 'KEY_PEPPER', 'TOLLGATE_PROVIDER_', 'tollgate_provider_x']) {
      expect(providerCredentialProblem(name, DEFAULT_PROVIDER_SECRET_PREFIX)).toMatch(/must start with/);
    }
    expect(providerCredentialProblem('TOLLGATE_PROVIDER_A-B', DEFAULT_PROVIDER_SECRET_PREFIX)).toMatch(
      /letters/,
    );
  });

  it('refuses an empty or too short prefix in configuration', () => {
    expect(ProviderSecretPrefix.safeParse('').success).toBe(false);
    expect(ProviderSecretPrefix.safeParse('X_').success).toBe(false);
    expect(ProviderSecretPrefix.safeParse('ACME_UPSTREAM_').success).toBe(true);
  });
});
