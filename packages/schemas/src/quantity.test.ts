import { describe, expect, it } from 'vitest';
import { currencyExponent, formatMoney, MoneySchema, moneyToDecimalString, parseMoney } from './money.ts';
import { formatQuantity, parseQuantity, Quantity, QuantityError, SignedQuantity } from './quantity.ts';

describe('integer-string quantities', () => {
  it('round-trips values beyond 2^53 exactly', () => {
    const values = ['9007199254740993', '18446744073709551615', '340282366920938463463374607431768211457'];
    for (const text of values) {
      const parsed = parseQuantity(text);
      expect(typeof parsed).toBe('bigint');
      expect(formatQuantity(parsed)).toBe(text);
      expect(formatQuantity(parsed + 1n)).not.toBe(text);
    }
    // A float cannot carry it: the same text through Number loses the last digit.
    expect(String(Number('9007199254740993'))).not.toBe('9007199254740993');
  });

  it.each(['', ' 1', '1 ', '01', '+1', '-1', '1.0', '1.5', '1e3', '0x10', 'NaN', 'Infinity', '１', '1_000'])(
    'refuses %j as an unsigned quantity',
    (text) => {
      expect(() => parseQuantity(text)).toThrow(QuantityError);
      expect(Quantity.safeParse(text).success).toBe(false);
    },
  );

  it('accepts signs only where asked, and never "-0"', () => {
    expect(parseQuantity('-25', { signed: true })).toBe(-25n);
    expect(() => parseQuantity('-0', { signed: true })).toThrow(QuantityError);
    expect(SignedQuantity.parse('-9223372036854775809')).toBe(-9223372036854775809n);
  });

  it('refuses numbers that are not strings', () => {
    expect(Quantity.safeParse(5).success).toBe(false);
    expect(() => parseQuantity(5 as unknown as string)).toThrow(QuantityError);
  });
});

describe('money', () => {
  it('keeps minor units, currency and exponent exactly', () => {
    const money = MoneySchema.parse({ amount: '9223372036854775807', currency: 'EUR', exponent: 2 });
    expect(money.amount).toBe(9223372036854775807n);
    expect(formatMoney(money)).toEqual({ amount: '9223372036854775807', currency: 'EUR', exponent: 2 });
    expect(moneyToDecimalString(money)).toBe('92233720368547758.07');
  });

  it('renders small amounts with leading zeros', () => {
    expect(moneyToDecimalString(parseMoney({ amount: '5', currency: 'USD', exponent: 2 }))).toBe('0.05');
    expect(moneyToDecimalString(parseMoney({ amount: '500', currency: 'JPY', exponent: 0 }))).toBe('500');
  });

  it.each([
    { amount: '19.99', currency: 'USD', exponent: 2 },
    { amount: 1999, currency: 'USD', exponent: 2 },
    { amount: '1999', currency: 'usd', exponent: 2 },
    { amount: '1999', currency: 'USD', exponent: 2.5 },
    { amount: '1999', currency: 'USD', exponent: 2, extra: true },
    // Past what a Postgres bigint keeps.
    { amount: '9223372036854775808', currency: 'USD', exponent: 2 },
    // Exponents other than the currency's own ISO 4217 minor units.
    { amount: '1900', currency: 'USD', exponent: 0 },
    { amount: '999', currency: 'JPY', exponent: 2 },
    { amount: '1000', currency: 'BHD', exponent: 2 },
    // Not a currency, or one with no minor unit (gold).
    { amount: '1', currency: 'ABC', exponent: 2 },
    { amount: '1', currency: 'XAU', exponent: 0 },
  ])('refuses %j', (wire) => {
    expect(MoneySchema.safeParse(wire).success).toBe(false);
  });

  it('names the exponent a currency needs', () => {
    expect(currencyExponent('USD')).toBe(2);
    expect(currencyExponent('JPY')).toBe(0);
    expect(currencyExponent('KWD')).toBe(3);
    expect(currencyExponent('XAU')).toBeNull();
    const refused = MoneySchema.safeParse({ amount: '1900', currency: 'USD', exponent: 0 });
    expect(refused.error?.issues).toEqual([
      expect.objectContaining({ path: ['exponent'], message: expect.stringContaining('use exponent 2') }),
    ]);
    expect(() => parseMoney({ amount: '999', currency: 'JPY', exponent: 2 })).toThrow(/exponent 0/);
  });
});
