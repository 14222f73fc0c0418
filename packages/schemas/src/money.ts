import { z } from 'zod';
import { formatQuantity, parseQuantity, QuantityString } from './quantity.ts';

/**
 * Money is an integer count of minor units with its currency and exponent:
 * {amount:"1999", currency:"USD", exponent:2} is 19.99 USD. No floating point anywhere.
 */
export interface Money {
  amount: bigint;
  currency: string;
  exponent: number;
}

export interface MoneyWire {
  amount: string;
  currency: string;
  exponent: number;
}

const CURRENCY = /^[A-Z]{3}$/;

/** The one definition of money on the wire: every API body and file reading money uses it. */
export const MoneyWireSchema = z.object({
  amount: QuantityString,
  currency: z.string().regex(CURRENCY, 'must be a three-letter upper-case currency code'),
  exponent: z.number().int().min(0).max(18),
});

export const MoneySchema = MoneyWireSchema.strict().transform(
  (wire): Money => ({ amount: BigInt(wire.amount), currency: wire.currency, exponent: wire.exponent }),
);

export function parseMoney(wire: MoneyWire): Money {
  if (!CURRENCY.test(wire.currency)) throw new TypeError(`invalid currency ${wire.currency}`);
  if (!Number.isInteger(wire.exponent) || wire.exponent < 0 || wire.exponent > 18) {
    throw new TypeError(`invalid exponent ${wire.exponent}`);
  }
  return { amount: parseQuantity(wire.amount), currency: wire.currency, exponent: wire.exponent };
}

export function formatMoney(money: Money): MoneyWire {
  return { amount: formatQuantity(money.amount), currency: money.currency, exponent: money.exponent };
}

/** "19.99" for {1999, USD, 2}: decimal text by string arithmetic, for display only. */
export function moneyToDecimalString(money: Money): string {
  const digits = money.amount.toString().padStart(money.exponent + 1, '0');
  if (money.exponent === 0) return digits;
  return `${digits.slice(0, -money.exponent)}.${digits.slice(-money.exponent)}`;
}
