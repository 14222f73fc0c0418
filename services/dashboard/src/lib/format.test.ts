import { describe, expect, it } from 'vitest';
import {
  creditsForMinor,
  creditsToMoney,
  decimalToMinor,
  formatBytes,
  formatMoney,
  groupDigits,
  perMillionTokens,
} from './format.ts';

describe('money and quantity formatting', () => {
  it('formats integer minor units with the exponent, never through a float', () => {
    expect(formatMoney({ amount: '810', currency: 'USD', exponent: 2 })).toBe('USD 8.10');
    expect(formatMoney({ amount: '5', currency: 'USD', exponent: 2 })).toBe('USD 0.05');
    expect(formatMoney({ amount: '1500', currency: 'JPY', exponent: 0 })).toBe('JPY 1,500');
    // Beyond 2^53, where a float would round.
    expect(formatMoney({ amount: '900719925474099312', currency: 'EUR', exponent: 2 })).toBe(
      'EUR 9,007,199,254,740,993.12',
    );
  });

  it('groups the digits of integer strings as they are', () => {
    expect(groupDigits('18014398509481985')).toBe('18,014,398,509,481,985');
    expect(groupDigits('0')).toBe('0');
    expect(groupDigits('-2500')).toBe('-2,500');
  });

  it('shows request sizes in KB and MB, not raw bytes', () => {
    expect(formatBytes(10_485_760)).toBe('10 MB');
    expect(formatBytes(33_554_432)).toBe('32 MB');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatBytes(512)).toBe('512 bytes');
  });

  it('shows credits in money from the exact rate, rounded toward zero', () => {
    const usd = { currency: 'USD', exponent: 2, perCredit: '0.000001' };
    expect(creditsToMoney('12345678', usd)).toBe('USD 12.34');
    expect(creditsToMoney('12345678', usd, 'exact')).toBe('USD 12.345678');
    expect(creditsToMoney('700', usd, 'exact')).toBe('USD 0.0007');
    expect(creditsToMoney('700', usd)).toBe('USD 0.00');
    expect(creditsToMoney('5000000', usd, 'exact')).toBe('USD 5.00');
    expect(creditsToMoney('-1999999', usd)).toBe('-USD 1.99');
    // Beyond 2^53 credits, where a float would round.
    expect(creditsToMoney('9007199254740993000000', usd)).toBe('USD 9,007,199,254,740,993.00');
    // A rate with more digits than shown: cut, never rounded up.
    expect(creditsToMoney('1', { currency: 'USD', exponent: 2, perCredit: '0.0000000019' }, 'exact')).toBe(
      'USD 0.00',
    );
    expect(creditsToMoney('3', { currency: 'JPY', exponent: 0, perCredit: '0.5' })).toBe('JPY 1');
    expect(perMillionTokens('3', usd)).toBe('USD 3.00');
    expect(perMillionTokens('1', { currency: 'EUR', exponent: 2, perCredit: '0.0000001' })).toBe('EUR 0.10');
  });

  it('reads a typed amount in minor units and the credits it buys, as the service does', () => {
    const usd = { currency: 'USD', exponent: 2, perCredit: '0.000001' };
    expect(decimalToMinor('12.34', 2)).toBe('1234');
    expect(decimalToMinor('5', 2)).toBe('500');
    expect(decimalToMinor('12.345', 2)).toBeNull();
    expect(decimalToMinor('1e3', 2)).toBeNull();
    expect(creditsForMinor('1234', usd)).toBe('12340000');
    expect(creditsForMinor('1', { currency: 'USD', exponent: 2, perCredit: '0.03' })).toBe('0');
  });
});
