import { z } from 'zod';

/**
 * Token and credit quantities travel as integer strings and live as bigint in code.
 * Accepted: "0", "42", "18446744073709551615". Refused: "", "01", "+1", "1.0", "1e3", " 1", "0x10".
 * Negative values only where a schema says so (adjustments, ledger deltas), never "-0".
 */
const UNSIGNED = /^(?:0|[1-9][0-9]*)$/;
const SIGNED = /^(?:0|-?[1-9][0-9]*)$/;
const POSITIVE = /^[1-9][0-9]*$/;
/** The one definition of an integer string, for schemas that keep the string (no bigint). */
export const INTEGER_STRING = { unsigned: UNSIGNED, signed: SIGNED, positive: POSITIVE } as const;

/**
 * The largest quantity or amount kept (a Postgres bigint, 2^63-1). Every balance, grant, price and
 * transfer stays at or below it: input past it is refused with validation_failed, and a change
 * that would carry a balance past it is refused the same way.
 */
export const QUANTITY_MAX = 9_223_372_036_854_775_807n;

/** Whether an integer string (either sign) fits a stored quantity. Never throws. */
export function fitsStoredQuantity(value: string): boolean {
  const digits = /^-?([0-9]{1,19})$/.exec(value)?.[1];
  return digits !== undefined && BigInt(digits) <= QUANTITY_MAX;
}

export class QuantityError extends Error {
  constructor(value: unknown) {
    super(`not an integer quantity: ${JSON.stringify(String(value)).slice(0, 40)}`);
    this.name = 'QuantityError';
  }
}

export function parseQuantity(value: string, options: { signed?: boolean } = {}): bigint {
  if (typeof value !== 'string' || !(options.signed ? SIGNED : UNSIGNED).test(value)) {
    throw new QuantityError(value);
  }
  return BigInt(value);
}

export function formatQuantity(value: bigint): string {
  return value.toString(10);
}

/** Non-negative integer string <-> bigint. */
export const Quantity = z.string().regex(UNSIGNED, 'must be a non-negative integer string').transform(BigInt);
/** Signed integer string <-> bigint. */
export const SignedQuantity = z.string().regex(SIGNED, 'must be an integer string').transform(BigInt);
/** Strictly positive integer string <-> bigint. */
export const PositiveQuantity = Quantity.refine((value) => value > 0n, 'must be greater than zero');

/** Wire form of a quantity (what a serialiser writes). */
export const QuantityString = z.string().regex(UNSIGNED, 'must be a non-negative integer string');
