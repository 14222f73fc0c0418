import { describe, expect, it } from 'vitest';
import { capWindow, checkCap, isValidTimeZone, ROLLING_MS, retryAfterSeconds } from './windows.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

describe('calendar windows', () => {
  it('are the local day, ISO week and month in the account timezone', () => {
    const now = at('2026-11-26T02:30:00Z'); // Thursday; 21:30 on the 25th in New York
    expect(iso(capWindow('day', 'UTC', now).start)).toBe('2026-11-26T00:00:00.000Z');
    expect(iso(capWindow('day', 'America/New_York', now).start)).toBe('2026-11-25T05:00:00.000Z');
    expect(iso(capWindow('day', 'America/New_York', now).end)).toBe('2026-11-26T05:00:00.000Z');
    expect(iso(capWindow('day', 'Asia/Kolkata', now).start)).toBe('2026-11-25T18:30:00.000Z');
    expect(iso(capWindow('week', 'UTC', now).start)).toBe('2026-11-23T00:00:00.000Z');
    expect(iso(capWindow('week', 'UTC', now).end)).toBe('2026-11-30T00:00:00.000Z');
    expect(iso(capWindow('month', 'Asia/Tokyo', now).start)).toBe('2026-10-31T15:00:00.000Z');
    expect(iso(capWindow('month', 'Asia/Tokyo', at('2026-12-31T20:00:00Z')).end)).toBe(
      '2027-01-31T15:00:00.000Z',
    );
  });

  it('are 23 or 25 hours long across a daylight-saving change', () => {
    const spring = capWindow('day', 'Europe/Berlin', at('2026-03-29T12:00:00Z'));
    expect(iso(spring.start)).toBe('2026-03-28T23:00:00.000Z');
    expect((spring.end as number) - spring.start).toBe(23 * 3_600_000);
    const autumn = capWindow('day', 'Europe/Berlin', at('2026-10-25T12:00:00Z'));
    expect((autumn.end as number) - autumn.start).toBe(25 * 3_600_000);
  });

  it('start at the first instant that exists when the clock skips midnight', () => {
    // Santiago moves from 00:00 to 01:00 on 2026-09-06: that day starts at 01:00 local (04:00Z).
    const day = capWindow('day', 'America/Santiago', at('2026-09-06T12:00:00Z'));
    expect(iso(day.start)).toBe('2026-09-06T04:00:00.000Z');
    expect(iso(capWindow('day', 'America/Santiago', at('2026-09-05T12:00:00Z')).end)).toBe(
      '2026-09-06T04:00:00.000Z',
    );
  });

  it('move to the next one at the local midnight exactly', () => {
    const midnight = at('2026-11-26T05:00:00Z'); // 00:00 in New York
    expect(iso(capWindow('day', 'America/New_York', midnight - 1).end)).toBe(iso(midnight));
    expect(iso(capWindow('day', 'America/New_York', midnight).start)).toBe(iso(midnight));
  });
});

describe('timezone names', () => {
  it('accepts IANA names and refuses anything else', () => {
    for (const name of ['UTC', 'Europe/Paris', 'America/Argentina/Buenos_Aires', 'Asia/Kathmandu']) {
      expect(isValidTimeZone(name)).toBe(true);
    }
    for (const name of ['', 'Mars/Olympus', 'Europe/Paris; drop table', 'x'.repeat(65)]) {
      expect(isValidTimeZone(name)).toBe(false);
    }
  });
});

describe('checkCap', () => {
  const now = at('2026-11-26T12:00:00Z');
  const rolling = capWindow('5h', 'UTC', now);

  it('admits while the window has room and counts only calls inside it', () => {
    const calls = [
      { at: now - ROLLING_MS, amount: 50n }, // exactly 5 hours ago: out
      { at: now - ROLLING_MS + 1, amount: 30n },
      { at: now - 1000, amount: 40n },
    ];
    expect(checkCap('5h', rolling, 100n, calls, 30n)).toMatchObject({ used: 70n, fits: true });
    expect(checkCap('5h', rolling, 100n, calls, 31n)).toMatchObject({ used: 70n, fits: false });
  });

  it('frees the rolling window call by call, oldest first', () => {
    const calls = [
      { at: now - 3 * 3_600_000, amount: 40n },
      { at: now - 2 * 3_600_000, amount: 40n },
      { at: now - 3_600_000, amount: 20n },
    ];
    const full = checkCap('5h', rolling, 100n, calls, 50n);
    expect(full.fits).toBe(false);
    // 40 frees 2 hours from now: 60 + 50 > 100; 80 frees at 3 hours: 20 + 50 fits.
    expect(full.freeAt).toBe(now + 3 * 3_600_000);
    expect(checkCap('5h', rolling, 100n, calls, 101n).freeAt).toBeNull();
  });

  it('frees a calendar window at its end', () => {
    const day = capWindow('day', 'Europe/Paris', now);
    const result = checkCap('day', day, 10n, [{ at: now - 1, amount: 10n }], 1n);
    expect(result).toMatchObject({ fits: false, freeAt: day.end });
    expect(checkCap('day', day, 10n, [{ at: (day.start as number) - 1, amount: 10n }], 10n).fits).toBe(true);
  });

  it('rounds Retry-After up to whole seconds', () => {
    expect(retryAfterSeconds(now + 1, now)).toBe(1);
    expect(retryAfterSeconds(now + 1000, now)).toBe(1);
    expect(retryAfterSeconds(now + 1001, now)).toBe(2);
    expect(retryAfterSeconds(now - 5, now)).toBe(1);
  });
});
