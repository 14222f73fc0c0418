import { createHmac, randomBytes, randomInt } from 'node:crypto';

/** Six digits: typed by hand; guessing is bounded by per-code attempts and per-address throttles. */
export function newRegisterCode(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0');
}

/** 256-bit reset token, hex (travels in a link). */
export function newResetToken(): string {
  return randomBytes(32).toString('hex');
}

/**
 * Codes and tokens are stored as an HMAC under the server pepper: a database dump alone cannot
 * be searched for the six-digit code, and a code is bound to its purpose and email.
 */
export function hashEmailCode(pepper: string, purpose: string, email: string, code: string): Buffer {
  return createHmac('sha256', pepper).update(`${purpose}\u0000${email}\u0000${code}`).digest();
}
