import { randomUUID } from 'node:crypto';
import type { Logger } from '@tollgate/service-kit';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import * as repository from '../engine.repository.ts';
import { readEntryRows, writeEntries } from './hot-entries.ts';
import type { HotStore, LeaseSource } from './hot-store.ts';

/**
 * What a lease holds, all its sources together, stays at or below this, so every amount and every
 * sum the hot tier's Lua forms is an integer below 2^53, exact in a double, even multiplied by the
 * overrun cover's per cent (R7, at most 1,000 < 2^10): docs/decisions/hot-tier-integers.md, R21.
 */
export const LEASE_CAP = 2n ** 43n;

/** How long a control plane opening a lease keeps the account to itself. */
const CLAIM_TTL_MS = 5_000;

/** The state tollgate_hot_open / tollgate_hot_topup return (db/functions/hot-tier.sql). */
interface LeaseState {
  lease: string;
  version: string;
  cut: string | null;
  sources: Array<{
    id: string | null;
    net: string;
    expiresAt?: string;
    aliases?: string[] | null;
    weighted?: boolean;
  }>;
}

/**
 * The leases of the hot tier: each account's balances moved to `reserved` in Postgres and held in
 * Redis for reservations. Opened on an account's first call, topped up when it runs short,
 * recalled before any balance change outside the hot path.
 */
export function createLeases(
  deps: { db: Kysely<Database>; logger: Logger; now: () => number },
  store: HotStore,
) {
  const { now } = deps;

  /**
   * Opens a lease for an account Redis holds none of. One control plane at a time: the claim in
   * Redis, checked again under the account's lock in Postgres, so a lease live in Redis is never
   * closed under it. 'busy' when another one is opening it.
   */
  async function openLease(accountId: string, keyIds: string[]): Promise<'done' | 'busy'> {
    const token = randomUUID();
    const claimed = await store.claim(accountId, token, CLAIM_TTL_MS, 'claim');
    if (claimed === 'present') return 'done';
    if (claimed !== 'claimed') return 'busy';
    const leaseId = randomUUID();
    const opened = await deps.db.transaction().execute(async (trx) => {
      await repository.lockAccountRow(trx, accountId);
      if ((await store.claim(accountId, token, CLAIM_TTL_MS, 'verify')) !== 'ok') return null;
      const { rows } = await sql<{ state: LeaseState }>`
        select tollgate_hot_open(${accountId}::uuid, ${leaseId}::uuid, ${String(LEASE_CAP)}::bigint) as state
      `.execute(trx);
      return { state: rows[0]!.state, entries: await readEntryRows(trx, accountId, keyIds) };
    });
    if (!opened) return 'busy';
    const at = now();
    await writeEntries(store, { accountId, ...opened.entries }, at, null);
    const written = await store.writeLease(accountId, leaseWrite('install', token, opened.state));
    if (written !== 'installed') {
      deps.logger.warn(
        { accountId, leaseId },
        'hot tier: lease opened but not installed; the next one closes it',
      );
    }
    return 'done';
  }

  /** Adds what became spendable in Postgres to the account's lease. */
  async function topUp(accountId: string, leaseId: string): Promise<void> {
    const state = await deps.db.transaction().execute(async (trx) => {
      await repository.lockAccountRow(trx, accountId);
      const { rows } = await sql<{ state: LeaseState | null }>`
        select tollgate_hot_topup(${leaseId}::uuid, ${String(LEASE_CAP)}::bigint) as state
      `.execute(trx);
      return rows[0]!.state;
    });
    if (state) await store.writeLease(accountId, leaseWrite('sync', '', state));
  }

  /**
   * Before a balance changes in Postgres (a grant, an adjustment, a transfer, a refund): what the
   * account's lease holds free comes back to Postgres in the same transaction (the caller holds
   * the account's lock), and the lease is marked to take what is spendable again at its next
   * short call, in draw order. Calls in flight keep what they hold. If Redis cannot be reached the
   * change goes ahead on what Postgres holds outside the lease.
   */
  async function recallInTransaction(trx: Transaction<Database>, accountId: string): Promise<void> {
    const names = store.keysOf(accountId);
    try {
      const { rows } = await sql<{ version: string }>`
        select nextval('tollgate_hot_version')::text as version
      `.execute(trx);
      const version = rows[0]!.version;
      const reply = await store.run('hotRecall', {
        keys: { lease: names.lease, claim: names.claim },
        args: { version },
      });
      if (reply[0] === 'absent') {
        // No lease in Redis and nobody opening one: a lease still open in Postgres is orphaned.
        if (Number(reply[1]) === 0) {
          await sql`select tollgate_hot_close(id, 'orphaned') from hot_leases
                    where account_id = ${accountId}::uuid and closed_at is null`.execute(trx);
        }
        return;
      }
      const returns: Array<{ entitlementId: string | null; amount: string }> = [];
      for (let index = 2; index < reply.length; index += 2) {
        const source = String(reply[index]);
        returns.push({ entitlementId: source === 'c' ? null : source, amount: String(reply[index + 1]) });
      }
      await sql`select tollgate_hot_return(${String(reply[1])}::uuid, ${version}::bigint, ${JSON.stringify(returns)}::jsonb)`.execute(
        trx,
      );
    } catch (error) {
      deps.logger.warn(
        { err: error, accountId },
        'hot tier: could not recall the lease; changing what Postgres holds',
      );
    }
  }

  /** Postgres holds more for these accounts than their leases know: the next short call tops up. */
  async function markMore(accountId: string): Promise<void> {
    await store.run('hotMore', { keys: { lease: store.keysOf(accountId).lease }, args: {} }).catch(() => {});
  }

  return { open: openLease, topUp, recallInTransaction, markMore };
}

export type Leases = ReturnType<typeof createLeases>;

function leaseWrite(mode: 'install' | 'sync', token: string, state: LeaseState) {
  const sources: LeaseSource[] = state.sources.map((source) => ({
    id: source.id ?? 'c',
    net: source.net,
    expiresAt: source.expiresAt ?? '0',
    aliases: source.aliases && source.aliases.length > 0 ? `,${source.aliases.join(',')},` : '',
    weighted: source.weighted ? '1' : '0',
  }));
  return { mode, token, leaseId: state.lease, version: state.version, cut: state.cut ?? '', sources };
}
