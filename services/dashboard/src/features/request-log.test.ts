import { describe, expect, it } from 'vitest';
import { creditsToMoney } from '../lib/format.ts';

const creditsInMoney = (credits: string, value: Parameters<typeof creditsToMoney>[1]) =>
  creditsToMoney(credits, value, 'exact');

const usd = { currency: 'USD', exponent: 2, perCredit: '0.000001' };

describe('a cost in money', () => {
  it('is exact with up to six digits past the minor unit, rounded toward zero', () => {
    expect(creditsInMoney('700', usd)).toBe('USD 0.0007');
    expect(creditsInMoney('606', usd)).toBe('USD 0.000606');
    expect(creditsInMoney('1000000', usd)).toBe('USD 1.00');
    expect(creditsInMoney('12345678', usd)).toBe('USD 12.345678');
    expect(creditsInMoney('1', { currency: 'USD', exponent: 2, perCredit: '0.000000001' })).toBe('USD 0.00');
    expect(creditsInMoney('3', { currency: 'JPY', exponent: 0, perCredit: '0.5' })).toBe('JPY 1.5');
    expect(creditsInMoney('9007199254740993', usd)).toBe('USD 9,007,199,254.740993');
  });
});
