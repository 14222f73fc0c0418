import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

/**
 * Lookup hash of a key: HMAC-SHA256 under the server pepper of the key's digest (lower-case hex
 * SHA-256 of the secret, what the gateway sends). Without the pepper, a database dump cannot be
 * matched against guessed or leaked secrets.
 */
export function lookupHashOf(pepper: string, digestHex: string): Buffer {
  return createHmac('sha256', pepper).update(digestHex).digest();
}

const LOOKUP_MEMO_LIMIT = 10_000;
const lookupMemos = new Map<string, Map<string, string>>();

/**
 * lookupHashOf in hex, remembered per pepper for the last LOOKUP_MEMO_LIMIT digests: every
 * metered call's reservation looks its key up, mostly the same few keys, and the HMAC costs more
 * than the rest of the reservation's own work.
 */
export function lookupHashHexOf(pepper: string, digestHex: string): string {
  let memo = lookupMemos.get(pepper);
  if (!memo) {
    memo = new Map();
    lookupMemos.set(pepper, memo);
  }
  let hex = memo.get(digestHex);
  if (hex === undefined) {
    if (memo.size >= LOOKUP_MEMO_LIMIT) memo.clear();
    hex = lookupHashOf(pepper, digestHex).toString('hex');
    memo.set(digestHex, hex);
  }
  return hex;
}

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM of a secret under the master key (kept outside the database). The key id is the
 * additional data, so a ciphertext copied onto another key's row does not decrypt.
 * Layout: version (1) | iv (12) | tag (16) | ciphertext.
 */
export function encryptSecret(masterKey: Buffer, keyId: string, secret: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv);
  cipher.setAAD(Buffer.from(keyId));
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), ciphertext]);
}

/** Throws when the blob was altered, belongs to another key or another master key. */
export function decryptSecret(masterKey: Buffer, keyId: string, blob: Buffer): string {
  if (blob[0] !== VERSION || blob.length <= 1 + IV_BYTES + TAG_BYTES)
    throw new Error('unknown ciphertext format');
  const iv = blob.subarray(1, 1 + IV_BYTES);
  const tag = blob.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', masterKey, iv);
  decipher.setAAD(Buffer.from(keyId));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(blob.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
    'utf8',
  );
}
