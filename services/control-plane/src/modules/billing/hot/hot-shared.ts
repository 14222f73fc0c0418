/** What the hot tier's operations (hot-reserve.ts, hot-finish.ts, hot-sweep.ts) share. */
import type { Logger } from '@tollgate/service-kit';
import type { Kysely } from 'kysely';
import type { Clock } from '../../../clock.ts';
import type { PreparedQueries } from '../../../db/database.ts';
import type { Database } from '../../../db/schema.ts';
import type { createAliasCache } from './hot-aliases.ts';
import type { Leases } from './hot-leases.ts';
import type { HotStore } from './hot-store.ts';

/** A release or hold of an id Redis never saw blocks that id's reserve this long. */
export const TOMBSTONE_TTL_MS = 10 * 60_000;
/** Rounds of one reservation batch through Redis (a lease to open, entries to read, a top-up). */
export const MAX_ROUNDS = 6;
/**
 * How long a call waits while another request (or control plane) opens its account's lease: a
 * first burst on a new account waits for one Postgres transaction, which a busy database can take
 * far longer than the rounds' few milliseconds to commit. Below the gateway's billing timeout.
 */
const LEASE_WAIT_MS = 2_000;
/** The pause between looks at a lease another request is opening, doubling up to this. */
const LEASE_POLL_MAX_MS = 40;

/** Waits a little for a lease another request is opening; false once waited long enough. */
export async function waitForLease(startedAt: number, waits: number): Promise<boolean> {
  if (performance.now() - startedAt >= LEASE_WAIT_MS) return false;
  await sleep(Math.min(5 * 2 ** waits, LEASE_POLL_MAX_MS));
  return true;
}

export interface HotTierDependencies {
  db: Kysely<Database>;
  prepared: PreparedQueries;
  logger: Logger;
  clock: Clock;
  keyPepper: string;
  coverPercent: number;
  reservationTimeoutMs: number;
  idleMs: number;
  writeGraceMs: number;
}

export type Reply = string[];

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The parts every operation works with, built once in createHotTier. */
export interface HotParts {
  deps: HotTierDependencies;
  store: HotStore;
  leases: Leases;
  aliases: ReturnType<typeof createAliasCache>;
}

export function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
