import { randomBytes } from 'node:crypto';
import { apiKeyDigest, generateApiKeySecret } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { decryptSecret, encryptSecret, lookupHashHexOf, lookupHashOf } from './key-crypto.ts';

describe('lookupHashOf', () => {
  it('depends on the pepper: the same key under another pepper does not match', () => {
    const digest = apiKeyDigest(generateApiKeySecret());
    const pepper = 'p'.repeat(32);
    expect(lookupHashOf(pepper, digest).equals(lookupHashOf(pepper, digest))).toBe(true);
    expect(lookupHashOf(pepper, digest).equals(lookupHashOf('q'.repeat(32), digest))).toBe(false);
    expect(lookupHashOf(pepper, digest).toString('hex')).not.toBe(digest);
  });
});

describe('lookupHashHexOf', () => {
  it('remembers per pepper: the same digest under two peppers gives each its own hash', () => {
    const digest = apiKeyDigest(generateApiKeySecret());
    for (const pepper of ['p'.repeat(32), 'q'.repeat(32), 'p'.repeat(32)]) {
      expect(lookupHashHexOf(pepper, digest)).toBe(lookupHashOf(pepper, digest).toString('hex'));
      expect(lookupHashHexOf(pepper, digest)).toBe(lookupHashOf(pepper, digest).toString('hex'));
    }
  });
});

describe('encryptSecret / decryptSecret', () => {
  const masterKey = randomBytes(32);
  const secret = generateApiKeySecret();

  it('round-trips, with a fresh nonce each time', () => {
    const first = encryptSecret(masterKey, 'key-1', secret);
    const second = encryptSecret(masterKey, 'key-1', secret);
    expect(first.equals(second)).toBe(false);
    expect(decryptSecret(masterKey, 'key-1', first)).toBe(secret);
  });

  it('refuses another master key, another key id, or an altered blob', () => {
    const blob = encryptSecret(masterKey, 'key-1', secret);
    expect(() => decryptSecret(randomBytes(32), 'key-1', blob)).toThrow();
    expect(() => decryptSecret(masterKey, 'key-2', blob)).toThrow();
    const altered = Buffer.from(blob);
    altered[altered.length - 1] = (altered.at(-1) ?? 0) ^ 1;
    expect(() => decryptSecret(masterKey, 'key-1', altered)).toThrow();
  });
});
