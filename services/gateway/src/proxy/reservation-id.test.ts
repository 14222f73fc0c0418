import { describe, expect, it } from 'vitest';
import { timeOrderedUuid } from './reservation-id.ts';

describe('timeOrderedUuid', () => {
  it('is a version 7 UUID with the RFC variant, and sorts by its time', () => {
    const ids = [1_700_000_000_000, 1_700_000_000_001, 1_800_000_000_000].map((ms) => timeOrderedUuid(ms));
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(ids[0]!.replaceAll('-', '').slice(0, 12)).toBe((1_700_000_000_000).toString(16).padStart(12, '0'));
  });

  it('never repeats', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => timeOrderedUuid()));
    expect(ids.size).toBe(10_000);
  });
});
