import currencyCodes from 'currency-codes';
import { z } from 'zod';
import { fitsStoredQuantity, formatQuantity, parseQuantity, QuantityString } from './quantity.ts';

/**
 * Money is an integer count of minor units with its currency and exponent:
 * {amount:"1999", currency:"USD", exponent:2} is 19.99 USD. No floating point anywhere.
 * The exponent is the currency's own (ISO 4217 minor units): USD 2, JPY 0, BHD 3. A price written
 * with another exponent would be charged 100 times too much or too little by a payment provider,
 * which reads amounts in the currency's minor units.
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

/**
 * ISO 4217 codes with no minor unit ("N.A."): precious metals, fund units, the testing code and
 * "no currency". Nothing a customer pays a package in.
 */
const NOT_PAYABLE = new Set([
  'XAG',
  'XAU',
  'XBA',
  'XBB',
  'XBC',
  'XBD',
  'XDR',
  'XPD',
  'XPT',
  'XSU',
  'XTS',
  'XUA',
  'XXX',
]);

/** The exponent ISO 4217 gives a currency (its minor units), or null for a code it does not list. */
export function currencyExponent(currency: string): number | null {
  if (!CURRENCY.test(currency) || NOT_PAYABLE.has(currency)) return null;
  return currencyCodes.code(currency)?.digits ?? null;
}

/** Why a currency and exponent do not make money, or null when they do. */
export function moneyProblem(currency: string, exponent: number): string | null {
  const expected = currencyExponent(currency);
  if (expected === null) return `${currency} is not an ISO 4217 currency customers can pay in`;
  if (exponent !== expected)
    return `${currency} has ${expected} decimal places (ISO 4217): use exponent ${expected}`;
  return null;
}

/**
 * The fields of money on the wire. Objects that read money add `checkMoney` (amount and exponent
 * must fit the currency); answers reuse the shape alone.
 */
export const MoneyWireShape = {
  amount: QuantityString.refine(fitsStoredQuantity, 'Too large.'),
  currency: z.string().regex(CURRENCY, 'must be a three-letter upper-case currency code'),
  exponent: z.number().int().min(0).max(18),
};

/** Refinement of any object with currency and exponent: the exponent must be the currency's own. */
export function checkMoney(value: { currency: string; exponent: number }, context: z.RefinementCtx): void {
  if (!CURRENCY.test(value.currency) || !Number.isInteger(value.exponent)) return;
  const problem = moneyProblem(value.currency, value.exponent);
  if (problem) {
    const path = currencyExponent(value.currency) === null ? 'currency' : 'exponent';
    context.addIssue({ code: 'custom', path: [path], message: problem });
  }
}

/** The one definition of money read from the wire: every API body and file reading money uses it. */
export const MoneyWireSchema = z.object(MoneyWireShape).superRefine(checkMoney);

export const MoneySchema = z
  .object(MoneyWireShape)
  .strict()
  .superRefine(checkMoney)
  .transform(
    (wire): Money => ({ amount: BigInt(wire.amount), currency: wire.currency, exponent: wire.exponent }),
  );

export function parseMoney(wire: MoneyWire): Money {
  if (!CURRENCY.test(wire.currency)) throw new TypeError(`invalid currency ${wire.currency}`);
  const problem = moneyProblem(wire.currency, wire.exponent);
  if (problem) throw new TypeError(problem);
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
