import { describe, expect, it } from 'vitest';
import { completePrice, costOf, highestInputPrice, totalInputTokens, usageParts } from './billing.ts';

describe('alias prices', () => {
  it('fill the parts not written so input and output alone charge every input token at the input price', () => {
    expect(completePrice({ input: 4, output: 9 })).toEqual({
      input: '4',
      output: '9',
      cacheRead: '4',
      cacheWrite: '4',
      cacheWrite1h: '4',
      request: '0',
    });
    expect(completePrice({ input: '4', output: '9', cacheWrite: '5', cacheRead: null })).toMatchObject({
      cacheRead: '4',
      cacheWrite: '5',
      cacheWrite1h: '5',
    });
  });

  it('reserve input at the highest input-side price and cost each part at its own', () => {
    const price = completePrice({
      input: 30,
      output: 150,
      cacheRead: 3,
      cacheWrite: 38,
      cacheWrite1h: 60,
      request: 7,
    });
    expect(highestInputPrice(price)).toBe(60n);
    const usage = {
      inputTokens: '40',
      outputTokens: '5',
      cacheReadTokens: '100',
      cacheWriteTokens: '20',
      cacheWrite1hTokens: '8',
    };
    expect(costOf(usage, price)).toBe(40n * 30n + 5n * 150n + 100n * 3n + 20n * 38n + 8n * 60n + 7n);
    expect(totalInputTokens(usage)).toBe(168n);
    expect(costOf({ inputTokens: '0', outputTokens: '0' }, price)).toBe(0n);
    // Absent parts are zero.
    expect(usageParts({ inputTokens: '1', outputTokens: '2' })).toEqual({
      input: 1n,
      cacheWrite: 0n,
      cacheWrite1h: 0n,
      cacheRead: 0n,
      output: 2n,
    });
  });
});
