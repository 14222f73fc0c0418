/**
 * What a spend cap is and what counts against it: the caps of an account and the calls counted,
 * read by both billing engines and by the caps' own service. A leaf: it imports neither the
 * dependencies nor billing, so the engines use it without an import cycle.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import {
  ACCOUNT_SUBJECT,
  type CapRow,
  selectCapsOfAccounts,
  selectCounters,
  selectUsageSince,
} from './spend-caps.repository.ts';
import { type CapPeriod, type CountedCall, capWindow } from './windows.ts';

export type CapParty = CapRow['set_by'];
export type CapUnit = CapRow['unit'];

export interface SpendCap {
  id: string;
  accountId: string;
  /** Null: every key of the account together. */
  keyId: string | null;
  setBy: CapParty;
  unit: CapUnit;
  period: CapPeriod;
  limit: bigint;
}

export interface AccountCaps {
  timeZone: string;
  caps: SpendCap[];
}

const toCap = (row: CapRow): SpendCap => ({
  id: row.id,
  accountId: row.account_id,
  keyId: row.key_id,
  setBy: row.set_by,
  unit: row.unit,
  period: row.period,
  limit: row.amount,
});

/** Every cap of these accounts (on the account or on one of its keys), with each account's timezone. */
export async function loadAccountCaps(
  db: Kysely<Database>,
  accountIds: readonly string[],
): Promise<Map<string, AccountCaps>> {
  const { caps, zones } = await selectCapsOfAccounts(db, accountIds);
  const result = new Map<string, AccountCaps>();
  for (const accountId of accountIds) {
    result.set(accountId, { timeZone: zones.get(accountId) ?? 'UTC', caps: [] });
  }
  for (const row of caps) result.get(row.account_id)?.caps.push(toCap(row));
  return result;
}

/** The caps that bound one key's calls: the account's own and the key's. */
export function capsOfKey(account: AccountCaps, keyId: string): SpendCap[] {
  return account.caps.filter((cap) => cap.keyId === null || cap.keyId === keyId);
}

/** One counted call of the rolling window, as a cap sees it. */
export interface CapCall {
  keyId: string;
  at: number;
  credits: bigint;
  tokens: bigint;
}

export const CALENDAR_PERIODS = ['day', 'week', 'month'] as const;
export type CalendarPeriod = (typeof CALENDAR_PERIODS)[number];

/**
 * The running sum of one subject (a key, or null: the whole account) in one calendar window: what
 * every call reserved in [start, end) counts, calls in flight at their estimate.
 */
export interface CapCounter {
  keyId: string | null;
  period: CalendarPeriod;
  start: number;
  end: number;
  credits: bigint;
  tokens: bigint;
}

/** What the caps of an account see: the rolling window's calls, and the calendar windows' sums. */
export interface CapCounts {
  calls: CapCall[];
  counters: CapCounter[];
}

/** The calendar windows (day, week, month in the account's timezone) a call counted at `at` counts in. */
export function callWindows(
  timeZone: string,
  at: number,
): Array<{ period: CalendarPeriod; start: number; end: number }> {
  return CALENDAR_PERIODS.map((period) => {
    const window = capWindow(period, timeZone, at);
    return { period, start: window.start, end: window.end as number };
  });
}

/** Counts an admitted call in the counts a batch judges against (its calls and its windows' sums). */
export function addCounted(counts: CapCounts, call: CapCall, timeZone: string): void {
  counts.calls.push(call);
  for (const window of callWindows(timeZone, call.at)) {
    for (const keyId of [null, call.keyId]) {
      const counter = counts.counters.find(
        (each) => each.keyId === keyId && each.period === window.period && each.start === window.start,
      );
      if (counter) {
        counter.credits += call.credits;
        counter.tokens += call.tokens;
      } else {
        counts.counters.push({ keyId, ...window, credits: call.credits, tokens: call.tokens });
      }
    }
  }
}

/**
 * What counts against one cap in its window now. The rolling window: each call with its instant.
 * A calendar window: the sums of the cap's subject in windows of its period that overlap it, one
 * entry each (after a timezone change, the old timezone's window overlapping the new one counts
 * whole until it no longer overlaps; otherwise windows follow one another and only one does).
 */
export function countedFor(
  cap: SpendCap,
  counts: CapCounts,
  window: { start: number; end: number | null },
): CountedCall[] {
  const amountOf = (each: { credits: bigint; tokens: bigint }) =>
    cap.unit === 'credits' ? each.credits : each.tokens;
  if (cap.period === '5h') {
    return counts.calls
      .filter((call) => cap.keyId === null || call.keyId === cap.keyId)
      .map((call) => ({ at: call.at, amount: amountOf(call) }));
  }
  const end = window.end as number;
  return counts.counters
    .filter(
      (counter) =>
        counter.keyId === cap.keyId &&
        counter.period === cap.period &&
        counter.start < end &&
        counter.end > window.start,
    )
    .map((counter) => ({ at: Math.max(counter.start, window.start), amount: amountOf(counter) }));
}

/** The earliest instant any of these caps' windows reaches back to at `now`. */
export function earliestStart(caps: readonly SpendCap[], timeZone: string, now: number): number {
  return Math.min(now, ...caps.map((cap) => capWindow(cap.period, timeZone, now).start));
}

/**
 * What an engine reads for these caps at `now`: the calls of the rolling window (none without a
 * rolling cap), and the sums of calendar windows that may overlap the current ones.
 */
export function countsSince(
  caps: readonly SpendCap[],
  timeZone: string,
  now: number,
): { callsSince: number | null; countersSince: number } {
  const rolling = caps.some((cap) => cap.period === '5h');
  const calendar = caps.filter((cap) => cap.period !== '5h');
  return {
    callsSince: rolling ? capWindow('5h', timeZone, now).start : null,
    countersSince: earliestStart(calendar, timeZone, now),
  };
}

/** The Postgres engine's counts (spend_cap_usage for the rolling window, spend_cap_counters). */
export async function readCounts(
  db: Kysely<Database>,
  accountId: string,
  since: { callsSince: number | null; countersSince: number },
  /** Only these subjects' sums (null: the account's); undefined: every subject's. */
  keyIds?: readonly string[],
): Promise<CapCounts> {
  const [calls, counters] = await Promise.all([
    since.callsSince === null ? [] : selectUsageSince(db, accountId, new Date(since.callsSince)),
    selectCounters(db, accountId, new Date(since.countersSince), keyIds),
  ]);
  return {
    calls: calls.map((row) => ({
      keyId: row.key_id,
      at: row.counted_at.getTime(),
      credits: row.credits,
      tokens: row.tokens,
    })),
    counters: counters.map((row) => ({
      keyId: row.subject === ACCOUNT_SUBJECT ? null : row.subject,
      period: row.period,
      start: row.window_start.getTime(),
      end: row.window_end.getTime(),
      credits: row.credits,
      tokens: row.tokens,
    })),
  };
}
