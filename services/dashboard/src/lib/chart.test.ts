import { describe, expect, it } from 'vitest';
import { compact, niceCeiling } from './chart.tsx';

describe('the usage chart y-axis', () => {
  it('tops the axis at a round figure at or above the largest day', () => {
    expect(niceCeiling(0n)).toBe(0n);
    expect(niceCeiling(7n)).toBe(10n);
    expect(niceCeiling(1_000n)).toBe(1_000n);
    expect(niceCeiling(1_001n)).toBe(2_000n);
    expect(niceCeiling(43_210n)).toBe(50_000n);
    expect(niceCeiling(18_014_398_509_481_985n)).toBe(20_000_000_000_000_000n);
  });

  it('labels the axis compactly', () => {
    expect(compact(0n)).toBe('0');
    expect(compact(950n)).toBe('950');
    expect(compact(1_500n)).toBe('1.5k');
    expect(compact(20_000n)).toBe('20k');
    expect(compact(3_000_000n)).toBe('3M');
    expect(compact(250_000_000n)).toBe('250M');
  });
});
