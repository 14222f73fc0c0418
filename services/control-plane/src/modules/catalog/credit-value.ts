/**
 * What a credit is worth, exactly: a decimal string of the catalogue currency ("0.000001" USD a
 * credit), read as integers (units / 10^scale). Money never passes through a float here; the
 * dashboard formats money for display from the same integers (docs/payments.md#money).
 */
export const DECIMAL = /^(0|[1-9][0-9]{0,17})(\.[0-9]{1,18})?$/;

export interface Decimal {
  units: bigint;
  scale: number;
}

export function parseDecimal(text: string): Decimal {
  if (!DECIMAL.test(text)) throw new TypeError(`not a decimal: ${text}`);
  const [whole, fraction = ''] = text.split('.');
  return { units: BigInt(`${whole}${fraction}`), scale: fraction.length };
}

/** A decimal amount in minor units, or null when it has more decimals than the currency. */
export function decimalToMinor(text: string, exponent: number): bigint | null {
  const { units, scale } = parseDecimal(text);
  if (scale > exponent) {
    const extra = 10n ** BigInt(scale - exponent);
    return units % extra === 0n ? units / extra : null;
  }
  return units * 10n ** BigInt(exponent - scale);
}

/**
 * Credits bought with `amount` minor units: amount / 10^exponent / value, rounded down to a whole
 * credit (the customer is never granted credit they did not pay for).
 */
export function creditsForMinor(amount: bigint, exponent: number, value: string): bigint {
  const { units, scale } = parseDecimal(value);
  return (amount * 10n ** BigInt(scale)) / (units * 10n ** BigInt(exponent));
}
