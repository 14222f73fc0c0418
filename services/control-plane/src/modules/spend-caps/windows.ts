/**
 * Spend-cap windows (docs/billing/spend-caps.md): pure arithmetic, no I/O.
 *
 * A call counts in a window by the instant it was reserved. `5h` is rolling: the 5 hours before
 * now. `day`, `week` (Monday to Monday) and `month` are calendar windows in the account's IANA
 * timezone, from the first instant of the local day, week or month to the first instant of the
 * next; across a daylight-saving change a day is 23 or 25 hours long, and a day whose midnight the
 * clock skips starts at the first instant that exists.
 */

export const CAP_PERIODS = ['5h', 'day', 'week', 'month'] as const;
export type CapPeriod = (typeof CAP_PERIODS)[number];

export const ROLLING_MS = 5 * 3_600_000;

/** [start, end) in ms; `end` is null for the rolling window (it never resets at once). */
export interface CapWindow {
  start: number;
  end: number | null;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** True for a timezone name the runtime's IANA database knows (`Europe/Paris`, `UTC`). */
export function isValidTimeZone(name: string): boolean {
  if (name.length === 0 || name.length > 64) return false;
  try {
    formatterOf(name);
    return true;
  } catch {
    return false;
  }
}

interface LocalDate {
  year: number;
  month: number;
  day: number;
}

function localDateOf(ms: number, timeZone: string): LocalDate {
  const parts = formatterOf(timeZone).formatToParts(new Date(ms));
  const value = (type: string) => Number(parts.find((part) => part.type === type)?.value);
  return { year: value('year'), month: value('month'), day: value('day') };
}

/** A comparable number for a calendar date (proleptic, no time). */
function ordinal(date: LocalDate): number {
  return Date.UTC(date.year, date.month - 1, date.day) / 86_400_000;
}

/**
 * The first instant (ms) whose local date in `timeZone` is `date` or later. Every zone's offset is
 * within ±15 hours, so the instant lies within 15 hours of the date's UTC midnight: a binary search
 * over that span, to the millisecond, finds it also where midnight does not exist.
 */
export function startOfLocalDate(date: LocalDate, timeZone: string): number {
  const target = ordinal(date);
  const midnight = Date.UTC(date.year, date.month - 1, date.day);
  let low = midnight - 15 * 3_600_000;
  let high = midnight + 15 * 3_600_000;
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if (ordinal(localDateOf(middle, timeZone)) >= target) high = middle;
    else low = middle + 1;
  }
  return low;
}

function addDays(date: LocalDate, days: number): LocalDate {
  const moved = new Date(Date.UTC(date.year, date.month - 1, date.day + days));
  return { year: moved.getUTCFullYear(), month: moved.getUTCMonth() + 1, day: moved.getUTCDate() };
}

function calendarBounds(period: Exclude<CapPeriod, '5h'>, today: LocalDate): [LocalDate, LocalDate] {
  if (period === 'day') return [today, addDays(today, 1)];
  if (period === 'week') {
    // ISO weeks: Monday first. getUTCDay: 0 = Sunday.
    const weekday = (new Date(Date.UTC(today.year, today.month - 1, today.day)).getUTCDay() + 6) % 7;
    const monday = addDays(today, -weekday);
    return [monday, addDays(monday, 7)];
  }
  const first = { year: today.year, month: today.month, day: 1 };
  const next =
    today.month === 12 ? { year: today.year + 1, month: 1, day: 1 } : { ...first, month: today.month + 1 };
  return [first, next];
}

const cache = new Map<string, CapWindow>();

/** The window a call reserved at `now` counts in. Calendar windows are cached until they end. */
export function capWindow(period: CapPeriod, timeZone: string, now: number): CapWindow {
  if (period === '5h') return { start: now - ROLLING_MS + 1, end: null };
  const name = `${period}|${timeZone}`;
  const cached = cache.get(name);
  if (cached && cached.start <= now && now < (cached.end as number)) return cached;
  const [from, to] = calendarBounds(period, localDateOf(now, timeZone));
  const window = { start: startOfLocalDate(from, timeZone), end: startOfLocalDate(to, timeZone) };
  if (cache.size > 10_000) cache.clear();
  cache.set(name, window);
  return window;
}

/** One call's share of a subject's usage: when it was reserved, and what it counts. */
export interface CountedCall {
  at: number;
  amount: bigint;
}

export interface CapCheck {
  limit: bigint;
  /** Counted in the window now, calls in flight at their estimate. */
  used: bigint;
  /** Whether `amount` more fits. */
  fits: boolean;
  /** When enough of the window frees for `amount` (ms); null when it fits now, or never will. */
  freeAt: number | null;
}

/**
 * Whether `amount` more fits under `limit` in the window, and if not, when it will. A calendar
 * window frees all at once at its end; the rolling window frees each call 5 hours after it was
 * reserved, oldest first. An amount above the limit itself fits no window: freeAt is the end of
 * the calendar window (when the count starts again), and null for the rolling one.
 */
export function checkCap(
  period: CapPeriod,
  window: CapWindow,
  limit: bigint,
  calls: readonly CountedCall[],
  amount: bigint,
): CapCheck {
  const inWindow = calls.filter(
    (call) => call.at >= window.start && (window.end === null || call.at < window.end),
  );
  const used = inWindow.reduce((sum, call) => sum + call.amount, 0n);
  if (used + amount <= limit) return { limit, used, fits: true, freeAt: null };
  if (period !== '5h') return { limit, used, fits: false, freeAt: window.end };
  if (amount > limit) return { limit, used, fits: false, freeAt: null };
  let left = used;
  for (const call of [...inWindow].sort((a, b) => a.at - b.at)) {
    left -= call.amount;
    if (left + amount <= limit) return { limit, used, fits: false, freeAt: call.at + ROLLING_MS };
  }
  return { limit, used, fits: false, freeAt: null };
}

/** Retry-After in whole seconds, rounded up so a retry at that moment fits; at least 1. */
export function retryAfterSeconds(freeAt: number, now: number): number {
  return Math.max(1, Math.ceil((freeAt - now) / 1000));
}
