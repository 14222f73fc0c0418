import { describe, expect, it } from 'vitest';
import { formatBytes, formatMoney, groupDigits } from './format.ts';

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
});
