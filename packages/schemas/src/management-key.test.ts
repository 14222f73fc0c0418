import { describe, expect, it } from 'vitest';
import { isWellFormedApiKey } from './api-key.ts';
import {
  generateManagementKeySecret,
  isWellFormedManagementKey,
  MANAGEMENT_KEY_PREFIX,
  maskManagementKey,
} from './management-key.ts';

describe('management key format', () => {
  it('has its own prefix and a checksum, and is never an inference key', () => {
    const secret = generateManagementKeySecret();
    expect(secret.startsWith(MANAGEMENT_KEY_PREFIX)).toBe(true);
    expect(secret.startsWith('sk-')).toBe(false);
    expect(isWellFormedManagementKey(secret)).toBe(true);
    expect(isWellFormedApiKey(secret)).toBe(false);
    expect(isWellFormedApiKey(`sk-tg-${secret.slice(MANAGEMENT_KEY_PREFIX.length)}`)).toBe(false);
  });

  it('refuses a mistyped key by its checksum', () => {
    const secret = generateManagementKeySecret();
    const last = secret.at(-1) === 'a' ? 'b' : 'a';
    expect(isWellFormedManagementKey(`${secret.slice(0, -1)}${last}`)).toBe(false);
    expect(isWellFormedManagementKey('mk-tg-short')).toBe(false);
  });

  it('masks to prefix, four characters and the last four', () => {
    const secret = generateManagementKeySecret();
    expect(maskManagementKey(secret)).toBe(`${secret.slice(0, 10)}…${secret.slice(-4)}`);
  });
});
