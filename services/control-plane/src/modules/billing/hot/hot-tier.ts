import { randomUUID } from 'node:crypto';
import { AppError, ERROR_CATALOG, toAppError } from '@tollgate/errors';
import type {
  FinishBatchRequest,
  FinishBatchResponse,
  FinishItem,
  FinishResult,
  ReserveBatchRequest,
  ReserveBatchResponse,
  ReserveItem,
  ReserveRefusalCode,
  ReserveResult,
} from '@tollgate/schemas';
import { type Logger, limiterKeys } from '@tollgate/service-kit';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { ControlPlaneConfig } from '../../../config.ts';
import type { PreparedQueries } from '../../../db/database.ts';
import type { Database } from '../../../db/schema.ts';
import type { Clock } from '../../../deps.ts';
import { lookupHashOf } from '../../api-keys/key-crypto.ts';
import * as repository from '../billing.repository.ts';
import { finishResultOf, finishRowOfItem, reserveResultOf, reserveRowOf } from '../billing.rows.ts';
import { accountEntryOf, ENTRY_TTL_MS, keyEntryOf, loadEntries, readEntryRows } from './hot-entries.ts';
import {
  type FinishedRecord,
  PERSIST_SQL,
  type PersistItem,
  parseRecord,
  persistColumns,
  persistItemOf,
} from './hot-records.ts';
import { createHotStore, type HotStore, type LeaseSource, type LeaseView } from './hot-store.ts';

/** Each source a lease holds stays below this, so Redis counts every amount exactly. */
export const LEASE_CAP = 2n ** 50n;
/** Reservations at least this large are made in Postgres, against what the lease gives back. */
const HOT_MAX_ESTIMATE = LEASE_CAP;
/** How long a control plane opening a lease keeps the account to itself. */
const CLAIM_TTL_MS = 5_000;
/** A release or hold of an id Redis never saw blocks that id's reserve this long. */
const TOMBSTONE_TTL_MS = 10 * 60_000;
/** A call short of balance asks Postgres for more at most this often (unless told it has more). */
const TOPUP_EVERY_MS = 1_000;
/** Rounds of one reservation batch through Redis (a lease to open, entries to read, a top-up). */
const MAX_ROUNDS = 6;

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

interface AliasInfo {
  published: boolean;
  protocols: string[];
  providerId: string;
  upstreamModel: string;
  inputPrice: string;
  outputPrice: string;
}

/** The state tollgate_hot_open / tollgate_hot_topup return (migration 0012). */
interface LeaseState {
  lease: string;
  version: string;
  more: boolean;
  sources: Array<{ id: string | null; net: string; expiresAt?: string; aliases?: string[] | null }>;
}

type Reply = string[];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The hot tier (README, "The hot tier"): reservations are answered from Redis against a lease of
 * each account's balances, with the key, the account, the alias and the limits checked in the
 * same script; finished calls are applied in Redis and written to Postgres in one durable
 * transaction per batch before the gateway is told. Postgres stays the source of truth: a lease is
 * money moved to `reserved` there, and whatever Redis loses is recovered from Postgres.
 */
export function createHotTier(deps: HotTierDependencies, store: HotStore) {
  const aliases = createAliasCache(deps.db);
  const now = () => deps.clock.now().getTime();

  // -------------------------------------------------------------------------------------------
  // Reservations.

  async function reserve(request: ReserveBatchRequest): Promise<ReserveBatchResponse> {
    const catalog = await aliases.get();
    const results: ReserveResult[] = new Array(request.items.length);
    const byAccount = new Map<string, number[]>();
    const inPostgres: number[] = [];
    request.items.forEach((item, index) => {
      const estimate = BigInt(item.estimate.inputTokens) + BigInt(item.estimate.outputTokens);
      if (estimate >= HOT_MAX_ESTIMATE) inPostgres.push(index);
      else byAccount.set(item.accountId, [...(byAccount.get(item.accountId) ?? []), index]);
    });
    await Promise.all([
      ...[...byAccount].map(([accountId, indexes]) =>
        reserveForAccount(accountId, indexes, request, catalog, results),
      ),
      inPostgres.length > 0 ? reserveInPostgres(inPostgres, request, results) : null,
    ]);
    return { results };
  }

  async function reserveForAccount(
    accountId: string,
    indexes: number[],
    request: ReserveBatchRequest,
    catalog: Map<string, AliasInfo>,
    results: ReserveResult[],
  ): Promise<void> {
    const names = store.keysOf(accountId);
    let pending = indexes;
    let topupAllowed = true;
    for (let round = 0; pending.length > 0; round += 1) {
      if (round === MAX_ROUNDS) {
        deps.logger.warn(
          { accountId, calls: pending.length },
          'hot tier: reservation did not settle in time',
        );
        for (const index of pending) results[index] = refusal(request.items[index]!, 'billing_unavailable');
        return;
      }
      const items = pending.map((index) => request.items[index]!);
      let replies: Reply[];
      try {
        replies = await store.run<Reply[]>(
          'hotReserve',
          [
            names.lease,
            names.calls,
            names.account,
            ...items.flatMap((item) => reserveKeys(names, item, request)),
          ],
          [
            topupAllowed ? '1' : '0',
            deps.coverPercent,
            request.limiter?.leaseTtlMs ?? 0,
            TOPUP_EVERY_MS,
            items.length,
            ...items.flatMap((item) => reserveArgs(item, request, catalog)),
          ],
        );
      } catch (error) {
        fail(items, pending, results, error, 'reservation');
        return;
      }
      const next: number[] = [];
      let cold = false;
      let missing = false;
      let topup: string | null = null;
      replies.forEach((reply, position) => {
        const index = pending[position]!;
        const item = request.items[index]!;
        switch (reply[0]) {
          case 'ok':
            results[index] = granted(item, reply, catalog, request);
            break;
          case 'no':
            results[index] = refusal(item, reply[1] as ReserveRefusalCode, Number(reply[2]));
            break;
          case 'cold':
            cold = true;
            next.push(index);
            break;
          case 'miss':
            missing = true;
            next.push(index);
            break;
          default:
            topup = reply[1] ?? null;
            next.push(index);
        }
      });
      if (next.length === 0) return;
      const keyIds = [...new Set(next.map((index) => request.items[index]!.keyId))];
      try {
        if (cold) {
          if ((await openLease(accountId, keyIds)) === 'busy') await sleep(5 * 2 ** round);
        } else if (missing) {
          await loadEntries(store, deps.db, accountId, keyIds, now());
          // A change of the key under way holds its entry until it commits (a few ms).
          if (round > 0) await sleep(5 * 2 ** round);
        }
        if (topup) {
          await topUp(accountId, topup);
          topupAllowed = false;
        }
      } catch (error) {
        const nextItems = next.map((index) => request.items[index]!);
        fail(nextItems, next, results, error, 'reservation slow path');
        return;
      }
      pending = next;
    }
  }

  function reserveKeys(
    names: ReturnType<HotStore['keysOf']>,
    item: ReserveItem,
    request: ReserveBatchRequest,
  ) {
    const limits = limiterKeys(
      request.limiter?.prefix ?? '',
      item.keyId,
      item.limits?.plan?.id ?? undefined,
      item.accountId,
    );
    return [names.key(item.keyId), limits.keyRate, limits.planRate, limits.keyLeases, limits.planLeases];
  }

  function reserveArgs(item: ReserveItem, request: ReserveBatchRequest, catalog: Map<string, AliasInfo>) {
    const alias = catalog.get(item.alias);
    const aliasState = !alias
      ? 'unknown'
      : !alias.published
        ? 'unpublished'
        : !alias.protocols.includes(item.surface)
          ? 'protocol'
          : 'ok';
    const limits = request.limiter ? item.limits : undefined;
    return [
      item.reservationId,
      item.keyId,
      lookupHashOf(deps.keyPepper, item.keyDigest).toString('hex'),
      item.alias,
      aliasState,
      item.surface,
      item.estimate.inputTokens,
      item.estimate.outputTokens,
      alias?.inputPrice ?? '',
      alias?.outputPrice ?? '',
      limits ? limits.keyRequestsPerMinute : '',
      limits ? limits.keyConcurrency : '',
      limits?.plan?.requestsPerMinute ?? '',
      limits?.plan?.concurrency ?? '',
      request.limiter?.windowMs ?? 0,
    ];
  }

  function granted(
    item: ReserveItem,
    reply: Reply,
    catalog: Map<string, AliasInfo>,
    request: ReserveBatchRequest,
  ): ReserveResult {
    const alias = catalog.get(item.alias);
    // A repeat of an id already finished (its alias since removed): nothing is held for it.
    if (!alias) return refusal(item, 'billing_unavailable');
    return {
      ok: true,
      reservationId: item.reservationId,
      keyId: item.keyId,
      accountId: item.accountId,
      providerId: alias.providerId,
      upstreamModel: alias.upstreamModel,
      reserved: { tokens: reply[2] ?? '0', credits: reply[3] ?? '0' },
      limited: item.limits !== undefined && request.limiter !== undefined,
    };
  }

  function fail(
    items: ReserveItem[],
    indexes: number[],
    results: ReserveResult[],
    error: unknown,
    what: string,
  ) {
    const code =
      toAppError(error).code === 'rate_limiter_unavailable'
        ? 'rate_limiter_unavailable'
        : 'billing_unavailable';
    deps.logger.warn({ err: error, calls: items.length }, `hot tier: ${what} failed`);
    items.forEach((item, position) => {
      results[indexes[position]!] = refusal(item, code);
    });
  }

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
      await repository.lockAccount(trx, accountId);
      if ((await store.claim(accountId, token, CLAIM_TTL_MS, 'verify')) !== 'ok') return null;
      const { rows } = await sql<{ state: LeaseState }>`
        select tollgate_hot_open(${accountId}::uuid, ${leaseId}::uuid, ${String(LEASE_CAP)}::bigint) as state
      `.execute(trx);
      return { state: rows[0]!.state, entries: await readEntryRows(trx, accountId, keyIds) };
    });
    if (!opened) return 'busy';
    const names = store.keysOf(accountId);
    const at = now();
    await Promise.all([
      ...opened.entries.keys.map((key) =>
        store.writeEntry(names.key(key.id), keyEntryOf(key), ENTRY_TTL_MS, at),
      ),
      opened.entries.account
        ? store.writeEntry(names.account, accountEntryOf(opened.entries.account), ENTRY_TTL_MS, at)
        : null,
    ]);
    const written = await store.writeLease(accountId, leaseWrite('install', token, opened.state, at));
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
      await repository.lockAccount(trx, accountId);
      const { rows } = await sql<{ state: LeaseState | null }>`
        select tollgate_hot_topup(${leaseId}::uuid, ${String(LEASE_CAP)}::bigint) as state
      `.execute(trx);
      return rows[0]!.state;
    });
    if (state) await store.writeLease(accountId, leaseWrite('sync', '', state, now()));
  }

  /** Reservations too large for exact doubles: made in Postgres, after the lease gives back what it holds free. */
  async function reserveInPostgres(
    indexes: number[],
    request: ReserveBatchRequest,
    results: ReserveResult[],
  ): Promise<void> {
    const items = indexes.map((index) => request.items[index]!);
    try {
      const rows = await deps.db.transaction().execute(async (trx) => {
        for (const accountId of [...new Set(items.map((item) => item.accountId))].sort()) {
          await repository.lockAccount(trx, accountId);
          await recallInTransaction(trx, accountId);
        }
        return repository.reserveBatchIn(
          trx,
          items.map((item) => reserveRowOf(deps, item)),
        );
      });
      rows.forEach((row, position) => {
        results[indexes[position]!] = reserveResultOf(row);
      });
    } catch (error) {
      fail(items, indexes, results, error, 'large reservation');
    }
  }

  // -------------------------------------------------------------------------------------------
  // Finishes.

  async function finish(request: FinishBatchRequest): Promise<FinishBatchResponse> {
    const catalog = await aliases.get();
    const records = new Map<string, { accountId: string; record: FinishedRecord }>();
    const results = new Map<string, FinishResult>();
    const byAccount = groupBy(request.items, (item) => item.accountId);

    const unknown: FinishItem[] = [];
    await Promise.all(
      [...byAccount].map(async ([accountId, items]) => {
        const replies = await finishInRedis(accountId, items, false, catalog);
        replies.forEach((reply, position) => {
          const item = items[position]!;
          if (reply[0] === 'done') records.set(item.reservationId, { accountId, record: parse(reply[1]!) });
          else unknown.push(item);
        });
      }),
    );
    if (unknown.length > 0) await finishUnknown(unknown, records, results, catalog);

    // Written durably before anyone is told; a call drawn from a lease closed meanwhile (Redis
    // lost it) is charged again against the open one.
    for (let round = 0; records.size > 0; round += 1) {
      const stale = await persist([...records.values()], results);
      records.clear();
      if (stale.length === 0) break;
      if (round === 2) throw new AppError('billing_unavailable');
      const items = request.items.filter((item) => stale.includes(item.reservationId));
      for (const [accountId, group] of groupBy(items, (item) => item.accountId)) {
        await store.written(
          accountId,
          group.map((item) => item.reservationId),
          now() + TOMBSTONE_TTL_MS,
        );
        const replies = await finishForgotten(accountId, group, catalog);
        replies.forEach((reply, position) => {
          if (reply[0] === 'done')
            records.set(group[position]!.reservationId, { accountId, record: parse(reply[1]!) });
        });
      }
    }
    return {
      results: request.items.map((item) => {
        const result = results.get(item.reservationId);
        if (!result) throw new AppError('billing_unavailable');
        return result;
      }),
    };
  }

  function finishInRedis(
    accountId: string,
    items: FinishItem[],
    forgotten: boolean,
    catalog: Map<string, AliasInfo>,
  ): Promise<Reply[]> {
    const names = store.keysOf(accountId);
    return store.run<Reply[]>(
      'hotFinish',
      [names.lease, names.calls],
      [
        forgotten ? '1' : '0',
        items.length,
        ...items.flatMap((item) => {
          const alias = catalog.get(item.alias);
          return [
            item.reservationId,
            item.action,
            item.action === 'settle' ? item.usage.inputTokens : '0',
            item.action === 'settle' ? item.usage.outputTokens : '0',
            item.outcome,
            item.httpStatus,
            item.keyId,
            item.alias,
            item.surface,
            alias?.inputPrice ?? '',
            alias?.outputPrice ?? '',
            String(Date.parse(item.occurredAt) * 1000),
          ];
        }),
      ],
    );
  }

  /** Charges calls Redis does not know against the open lease (opening one if needed). */
  async function finishForgotten(
    accountId: string,
    items: FinishItem[],
    catalog: Map<string, AliasInfo>,
  ): Promise<Reply[]> {
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      const replies = await finishInRedis(accountId, items, true, catalog);
      if (!replies.some((reply) => reply[0] === 'cold')) return replies;
      if ((await openLease(accountId, [])) === 'busy') await sleep(5 * 2 ** round);
    }
    throw new AppError('billing_unavailable');
  }

  /**
   * Finishes of calls Redis does not know: a call already in Postgres (written earlier, held by
   * the reconciler, or reserved there) goes the Postgres way; any other was lost with Redis (or
   * never reserved) and is charged against the lease, or released or held with a tombstone.
   */
  async function finishUnknown(
    items: FinishItem[],
    records: Map<string, { accountId: string; record: FinishedRecord }>,
    results: Map<string, FinishResult>,
    catalog: Map<string, AliasInfo>,
  ): Promise<void> {
    const known = new Set(
      (
        await deps.db
          .selectFrom('reservations')
          .select('id')
          .where(
            'id',
            'in',
            items.map((item) => item.reservationId),
          )
          .execute()
      ).map((row) => row.id),
    );
    const inPostgres = items.filter((item) => known.has(item.reservationId));
    if (inPostgres.length > 0) {
      const rows = await repository.finishBatch(deps.prepared, inPostgres.map(finishRowOfItem));
      for (const row of rows) results.set(row.reservation_id, finishResultOf(row));
      // A held call released there gave its amount back to Postgres: the lease may take it.
      await Promise.all(
        [...new Set(inPostgres.map((item) => item.accountId))].map((accountId) => markMore(accountId)),
      );
    }
    const lost = items.filter((item) => !known.has(item.reservationId));
    for (const [accountId, group] of groupBy(lost, (item) => item.accountId)) {
      const replies = await finishForgotten(accountId, group, catalog);
      replies.forEach((reply, position) => {
        if (reply[0] === 'done')
          records.set(group[position]!.reservationId, { accountId, record: parse(reply[1]!) });
      });
    }
  }

  /** Writes finished calls; returns the ids drawn from leases closed meanwhile (not written). */
  async function persist(
    entries: Array<{ accountId: string; record: FinishedRecord }>,
    results: Map<string, FinishResult>,
  ): Promise<string[]> {
    const items: PersistItem[] = entries.map(({ accountId, record }) => persistItemOf(accountId, record));
    const [row] = await deps.prepared.run<{ results: unknown }>(
      'tollgate_hot_persist',
      PERSIST_SQL,
      persistColumns(items),
    );
    const stale: string[] = [];
    for (const result of repository.parsePersistResults(row?.results, items.length)) {
      if ('stale' in result) stale.push(result.reservation_id);
      else results.set(result.reservation_id, finishResultOf(result));
    }
    // Redis may forget them now; a repeat finds them in Postgres.
    const written = groupBy(
      entries.filter(({ record }) => !stale.includes(record.id)),
      (entry) => entry.accountId,
    );
    await Promise.all(
      [...written].map(([accountId, group]) =>
        store
          .written(
            accountId,
            group.map(({ record }) => record.id),
            now() + TOMBSTONE_TTL_MS,
          )
          .catch((error: unknown) => {
            deps.logger.warn(
              { err: error, accountId },
              'hot tier: could not drop written calls (written again later)',
            );
          }),
      ),
    );
    return stale;
  }

  // -------------------------------------------------------------------------------------------
  // Balance changes outside the hot path, reports, the reconciler.

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
      const reply = await store.run<Array<string | number>>(
        'hotRecall',
        [names.lease, names.claim],
        [version],
      );
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
    await store.run('hotMore', [store.keysOf(accountId).lease], []).catch(() => {});
  }

  /** The account's lease as Redis holds it now (null: none), for balance reports. */
  function view(accountId: string): Promise<LeaseView | null> {
    return store.readLease(accountId);
  }

  /**
   * The reconciler's pass over every open lease: calls in flight past the reservation timeout are
   * held (settlement_missing), finished calls a stopped control plane left unwritten are written,
   * idle leases are returned, and leases whose Redis state is gone are closed.
   */
  async function sweep(): Promise<{ held: string[]; written: number; closed: number }> {
    const open = await deps.db
      .selectFrom('hot_leases')
      .select(['id', 'account_id'])
      .where('closed_at', 'is', null)
      .execute();
    const held: string[] = [];
    let written = 0;
    let closed = 0;
    for (const lease of open) {
      const names = store.keysOf(lease.account_id);
      const reply = await store.run<string[]>(
        'hotSweep',
        [names.lease, names.calls, names.claim],
        [lease.id, now(), deps.reservationTimeoutMs, deps.writeGraceMs, deps.idleMs],
      );
      if (reply[0] === 'closed' || (reply[0] === 'absent' && Number(reply[1]) === 0)) {
        await deps.db.transaction().execute(async (trx) => {
          await repository.lockAccount(trx, lease.account_id);
          await sql`select tollgate_hot_close(${lease.id}::uuid, ${reply[0] === 'closed' ? 'idle' : 'orphaned'})`.execute(
            trx,
          );
        });
        closed += 1;
      } else if (reply[0] === 'open' && reply.length > 1) {
        const records = reply.slice(1).map((text) => ({ accountId: lease.account_id, record: parse(text) }));
        const stale = await persist(records, new Map());
        held.push(
          ...records
            .filter(({ record }) => record.outcome === 'settlement_missing' && !stale.includes(record.id))
            .map(({ record }) => record.id),
        );
        written += records.length - stale.length;
      }
    }
    return { held, written, closed };
  }

  return {
    store,
    reserve,
    finish,
    recallInTransaction,
    markMore,
    view,
    sweep,
    catalogChanged: () => aliases.drop(),
    close: () => store.close(),
  };
}

export type HotTier = ReturnType<typeof createHotTier>;

function refusal(item: ReserveItem, code: ReserveRefusalCode, retryMs = 0): ReserveResult {
  return {
    ok: false,
    reservationId: item.reservationId,
    code,
    message: ERROR_CATALOG[code].message,
    ...(code === 'rate_limit_exceeded' ? { retryAfterSeconds: Math.max(1, Math.ceil(retryMs / 1000)) } : {}),
  };
}

function leaseWrite(mode: 'install' | 'sync', token: string, state: LeaseState, at: number) {
  const sources: LeaseSource[] = state.sources.map((source) => ({
    id: source.id ?? 'c',
    net: source.net,
    expiresAt: source.expiresAt ?? '0',
    aliases: source.aliases && source.aliases.length > 0 ? `,${source.aliases.join(',')},` : '',
  }));
  return { mode, token, leaseId: state.lease, version: state.version, more: state.more, now: at, sources };
}

function parse(text: string): FinishedRecord {
  return parseRecord(text);
}

function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

/** The catalogue as reservations need it, read at most every couple of seconds (and at once after a change here). */
function createAliasCache(db: Kysely<Database>) {
  const TTL_MS = 2_000;
  let cached: { at: number; aliases: Map<string, AliasInfo> } | null = null;
  let loading: Promise<Map<string, AliasInfo>> | null = null;
  async function load(): Promise<Map<string, AliasInfo>> {
    const rows = await db.selectFrom('model_aliases').selectAll().execute();
    const aliases = new Map(
      rows.map((row) => [
        row.alias,
        {
          published: row.published,
          protocols: row.protocols,
          providerId: row.provider_id,
          upstreamModel: row.upstream_model,
          // A credit price needs both; one without the other pays nothing from credit (as in SQL).
          inputPrice: row.input_price !== null && row.output_price !== null ? String(row.input_price) : '',
          outputPrice: row.input_price !== null && row.output_price !== null ? String(row.output_price) : '',
        },
      ]),
    );
    cached = { at: Date.now(), aliases };
    return aliases;
  }
  return {
    async get(): Promise<Map<string, AliasInfo>> {
      if (cached && Date.now() - cached.at < TTL_MS) return cached.aliases;
      loading ??= load().finally(() => {
        loading = null;
      });
      return loading;
    },
    drop(): void {
      cached = null;
    },
  };
}

/** The hot tier when REDIS_URL is set and HOT_TIER is on; null otherwise (reservations in Postgres). */
export function openHotTier(
  config: ControlPlaneConfig,
  parts: { db: Kysely<Database>; prepared: PreparedQueries; logger: Logger; clock: Clock },
): HotTier | null {
  if (!config.hotTier || !config.redisUrl) return null;
  const store = createHotStore(
    { url: config.redisUrl, cluster: config.redisCluster },
    config.redisKeyPrefix,
    parts.logger,
  );
  return createHotTier(
    {
      ...parts,
      keyPepper: config.keyPepper,
      coverPercent: config.billing.overrunCoverPercent,
      reservationTimeoutMs: config.billing.reservationTimeoutMs,
      idleMs: config.hotTier.idleMs,
      writeGraceMs: config.hotTier.writeGraceMs,
    },
    store,
  );
}
