import { createHash, randomBytes } from 'node:crypto';

/**
 * Management key format (reseller software, /api/v1/reseller-management only): `mk-tg-` + 40
 * base62 characters of randomness + 6 base62 characters of checksum. Never `sk-`, so the gateway
 * refuses it at its format check and no inference-key scanner or guard mistakes one for the other.
 */
export const MANAGEMENT_KEY_PREFIX = 'mk-tg-';
const BODY_LENGTH = 40;
const CHECKSUM_LENGTH = 6;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const WELL_FORMED = new RegExp(`^${MANAGEMENT_KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}$`);

/** The scopes a management key can hold: one per reseller-management endpoint. */
export const MANAGEMENT_SCOPES = [
  'customers:read',
  'customers:write',
  'grants:write',
  'usage:read',
  'keys:write',
  'keys:status',
] as const;
export type ManagementScope = (typeof MANAGEMENT_SCOPES)[number];

function base62(bytes: Buffer, length: number): string {
  let value = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  for (let index = 0; index < length; index += 1) {
    out += BASE62[Number(value % 62n)];
    value /= 62n;
  }
  return out;
}

// Domain-separated from the inference checksum, so a body cannot be re-prefixed into the other kind.
function checksumOf(body: string): string {
  return base62(createHash('sha256').update(`mk:${body}`).digest().subarray(0, 8), CHECKSUM_LENGTH);
}

export function generateManagementKeySecret(): string {
  const body = base62(randomBytes(32), BODY_LENGTH);
  return `${MANAGEMENT_KEY_PREFIX}${body}${checksumOf(body)}`;
}

/** Shape and checksum only; says nothing about whether the key exists. */
export function isWellFormedManagementKey(secret: string): boolean {
  if (!WELL_FORMED.test(secret)) return false;
  const body = secret.slice(MANAGEMENT_KEY_PREFIX.length, MANAGEMENT_KEY_PREFIX.length + BODY_LENGTH);
  return secret.slice(MANAGEMENT_KEY_PREFIX.length + BODY_LENGTH) === checksumOf(body);
}

/** `mk-tg-Ab12…wXyz`: enough to recognise a key in a list, never enough to use it. */
export function maskManagementKey(secret: string): string {
  return `${secret.slice(0, MANAGEMENT_KEY_PREFIX.length + 4)}…${secret.slice(-4)}`;
}
