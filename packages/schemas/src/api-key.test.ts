import { describe, expect, it } from 'vitest';
import {
  API_KEY_PREFIX,
  apiKeyDigest,
  generateApiKeySecret,
  isWellFormedApiKey,
  maskApiKey,
} from './api-key.ts';

describe('api key format', () => {
  it('generates distinct, well-formed keys', () => {
    const keys = new Set(Array.from({ length: 200 }, generateApiKeySecret));
    expect(keys.size).toBe(200);
    for (const key of keys) {
      expect(key.startsWith(API_KEY_PREFIX)).toBe(true);
      expect(isWellFormedApiKey(key)).toBe(true);
    }
  });

  it('refuses a key whose checksum does not match', () => {
    const key = generateApiKeySecret();
    const last = key.at(-1) === 'a' ? 'b' : 'a';
    expect(isWellFormedApiKey(key.slice(0, -1) + last)).toBe(false);
    const flippedBody = key.slice(0, 10) + (key[10] === 'x' ? 'y' : 'x') + key.slice(11);
    expect(isWellFormedApiKey(flippedBody)).toBe(false);
  });

  it.each(['', 'sk-', 'sk-tg-short', `sk-other-${'a'.repeat(46)}`, `${generateApiKeySecret()}x`])(
    'refuses %j',
    (text) => {
      expect(isWellFormedApiKey(text)).toBe(false);
    },
  );

  it('digests to 64 hex characters and masks without revealing the body', () => {
    const key = generateApiKeySecret();
    expect(apiKeyDigest(key)).toMatch(/^[0-9a-f]{64}$/);
    const mask = maskApiKey(key);
    expect(mask.startsWith('sk-tg-')).toBe(true);
    expect(mask.length).toBeLessThan(16);
    expect(key.includes(mask.replace('…', ''))).toBe(false);
  });
});
