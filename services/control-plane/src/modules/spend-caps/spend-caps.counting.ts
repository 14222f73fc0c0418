/**
 * What a spend cap is and what counts against it: the caps of an account and the calls counted,
 * read by both billing engines and by the caps' own service. A leaf: it imports neither the
 * dependencies nor billing, so the engines use it without an import cycle.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { type CapRow, selectCapsOfAccounts, selectUsageSince } from './spend-caps.repository.ts';
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

/** One counted call, as a cap sees it. */
export interface CapCall {
  keyId: string;
  at: number;
  credits: bigint;
  tokens: bigint;
}

export function countedFor(cap: SpendCap, calls: readonly CapCall[]): CountedCall[] {
  return calls
    .filter((call) => cap.keyId === null || call.keyId === cap.keyId)
    .map((call) => ({ at: call.at, amount: cap.unit === 'credits' ? call.credits : call.tokens }));
}

/** The earliest instant any of these caps' windows reaches back to at `now`. */
export function earliestStart(caps: readonly SpendCap[], timeZone: string, now: number): number {
  return Math.min(now, ...caps.map((cap) => capWindow(cap.period, timeZone, now).start));
}

/** The Postgres engine's counts (spend_cap_usage). */
export async function readCountedCalls(
  db: Kysely<Database>,
  accountId: string,
  since: number,
): Promise<CapCall[]> {
  const rows = await selectUsageSince(db, accountId, new Date(since));
  return rows.map((row) => ({
    keyId: row.key_id,
    at: row.counted_at.getTime(),
    credits: row.credits,
    tokens: row.tokens,
  }));
}
