import { hash, randomBytes } from 'node:crypto';

/**
 * Inference key format: `sk-tg-` + 40 base62 characters of randomness (238 bits) + 6 base62
 * characters of checksum. The checksum lets the gateway refuse a mistyped or made-up key without
 * any lookup, and lets secret scanners recognise a leaked key.
 */
export const API_KEY_PREFIX = 'sk-tg-';
const BODY_LENGTH = 40;
const CHECKSUM_LENGTH = 6;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const WELL_FORMED = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}$`);

function base62(bytes: Buffer, length: number): string {
  let value = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  for (let index = 0; index < length; index += 1) {
    out += BASE62[Number(value % 62n)];
    value /= 62n;
  }
  return out;
}

function checksumOf(body: string): string {
  // The first 8 bytes of the digest, read as one integer (every gateway call checks a key).
  let value = hash('sha256', body, 'buffer').readBigUInt64BE(0);
  let out = '';
  for (let index = 0; index < CHECKSUM_LENGTH; index += 1) {
    out += BASE62[Number(value % 62n)];
    value /= 62n;
  }
  return out;
}

export function generateApiKeySecret(): string {
  const body = base62(randomBytes(32), BODY_LENGTH);
  return `${API_KEY_PREFIX}${body}${checksumOf(body)}`;
}

/** Shape and checksum only; says nothing about whether the key exists. */
export function isWellFormedApiKey(secret: string): boolean {
  if (!WELL_FORMED.test(secret)) return false;
  const body = secret.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + BODY_LENGTH);
  return secret.slice(API_KEY_PREFIX.length + BODY_LENGTH) === checksumOf(body);
}

/** Lower-case hex SHA-256 of the secret: what the gateway sends instead of the secret. */
export function apiKeyDigest(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/** `sk-tg-Ab12…wXyz`: enough to recognise a key in a list, never enough to use it. */
export function maskApiKey(secret: string): string {
  return `${secret.slice(0, API_KEY_PREFIX.length + 4)}…${secret.slice(-4)}`;
}
