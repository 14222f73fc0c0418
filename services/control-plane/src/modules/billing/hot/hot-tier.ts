import { AppError, ERROR_CATALOG, toAppError } from '@tollgate/errors';
import type {
  FinishBatchRequest,
  FinishBatchResponse,
  FinishItem,
  FinishResult,
  RequestBudget,
  ReserveBatchRequest,
  ReserveBatchResponse,
  ReserveItem,
  ReserveRefusalCode,
  ReserveResult,
} from '@tollgate/schemas';
import { type Logger, limiterKeys } from '@tollgate/service-kit';
import { type Kysely, sql } from 'kysely';
import type { Clock } from '../../../clock.ts';
import type { ControlPlaneConfig } from '../../../config.ts';
import type { PreparedQueries } from '../../../db/database.ts';
import type { Database } from '../../../db/schema.ts';
import { lookupHashOf } from '../../api-keys/key-crypto.ts';
import * as repository from '../billing.repository.ts';
import { finishResultOf, finishRowOfItem, reserveResultOf, reserveRowOf } from '../billing.rows.ts';
import { type AliasInfo, createAliasCache } from './hot-aliases.ts';
import { createHotCaps } from './hot-caps.ts';
import { loadEntries } from './hot-entries.ts';
import { createLeases, LEASE_CAP } from './hot-leases.ts';
import {
  type FinishedRecord,
  PERSIST_SQL,
  type PersistItem,
  parseRecord,
  persistColumns,
  persistItemOf,
} from './hot-records.ts';
import { createHotStore, type HotStore, type LeaseView } from './hot-store.ts';

/** Reservations at least this large are made in Postgres, against what the lease gives back. */
const HOT_MAX_ESTIMATE = LEASE_CAP;
/** A release or hold of an id Redis never saw blocks that id's reserve this long. */
const TOMBSTONE_TTL_MS = 10 * 60_000;
/** A call short of balance asks Postgres for more at most this often (unless told it has more). */
const TOPUP_EVERY_MS = 1_000;
/** Rounds of one reservation batch through Redis (a lease to open, entries to read, a top-up). */
const MAX_ROUNDS = 6;
/**
 * How long a call waits while another request (or control plane) opens its account's lease: a
 * first burst on a new account waits for one Postgres transaction, which a busy database can take
 * far longer than the rounds' few milliseconds to commit. Below the gateway's billing timeout.
 */
const LEASE_WAIT_MS = 2_000;
/** The pause between looks at a lease another request is opening, doubling up to this. */
const LEASE_POLL_MAX_MS = 40;

/** Waits a little for a lease another request is opening; false once waited long enough. */
async function waitForLease(startedAt: number, waits: number): Promise<boolean> {
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

type Reply = string[];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The hot tier (docs/billing/hot-tier.md): reservations are answered from Redis against a lease of
 * each account's balances, with the key, the account, the alias and the limits checked in the
 * same script; finished calls are applied in Redis and written to Postgres in one durable
 * transaction per batch before the gateway is told. Postgres stays the source of truth: a lease is
 * money moved to `reserved` there, and whatever Redis loses is recovered from Postgres.
 */
export function createHotTier(deps: HotTierDependencies, store: HotStore) {
  const aliases = createAliasCache(deps.db);
  const now = () => deps.clock.now().getTime();
  const leases = createLeases({ db: deps.db, logger: deps.logger, now }, store);

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
    // Rounds spent waiting for a lease another request is opening count in time, not in rounds.
    const startedAt = performance.now();
    let waits = 0;
    for (let round = 0; pending.length > 0; round += 1) {
      if (round - waits === MAX_ROUNDS) {
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
        replies = await store.run('hotReserve', {
          keys: { lease: names.lease, calls: names.calls, account: names.account },
          args: {
            topupAllowed: topupAllowed ? '1' : '0',
            coverPercent: deps.coverPercent,
            leaseTtlMs: request.limiter?.leaseTtlMs ?? 0,
            topupEveryMs: TOPUP_EVERY_MS,
          },
          items: items.map((item) => ({
            keys: reserveKeys(names, item, request),
            args: reserveArgs(item, request, catalog),
          })),
        });
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
            results[index] = refusal(item, reply[1] as ReserveRefusalCode, Number(reply[2]), reply[3]);
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
          if ((await leases.open(accountId, keyIds)) === 'busy') {
            if (await waitForLease(startedAt, waits)) waits += 1;
          }
        } else if (missing) {
          await loadEntries(store, deps.db, accountId, keyIds, now());
          // A change of the key under way holds its entry until it commits (a few ms).
          if (round > 0) await sleep(5 * 2 ** round);
        }
        if (topup) {
          await leases.topUp(accountId, topup);
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
    return {
      key: names.key(item.keyId),
      keyRate: limits.keyRate,
      planRate: limits.planRate,
      keyLeases: limits.keyLeases,
      planLeases: limits.planLeases,
    };
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
    return {
      id: item.reservationId,
      keyId: item.keyId,
      lookupHash: lookupHashOf(deps.keyPepper, item.keyDigest).toString('hex'),
      alias: item.alias,
      aliasState,
      surface: item.surface,
      estimateIn: item.estimate.inputTokens,
      estimateOut: item.estimate.outputTokens,
      inputPrice: alias?.inputPrice ?? '',
      outputPrice: alias?.outputPrice ?? '',
      keyRpm: limits ? limits.keyRequestsPerMinute : '',
      keyConcurrency: limits ? limits.keyConcurrency : '',
      planRpm: limits?.plan?.requestsPerMinute ?? '',
      planConcurrency: limits?.plan?.concurrency ?? '',
      windowMs: request.limiter?.windowMs ?? 0,
    };
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
      ...budgetOf(reply[4]),
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
          await repository.lockAccountRow(trx, accountId);
          await leases.recallInTransaction(trx, accountId);
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
          if (reply[0] === 'done')
            records.set(item.reservationId, { accountId, record: parseRecord(reply[1]!) });
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
          TOMBSTONE_TTL_MS,
        );
        const replies = await finishForgotten(accountId, group, catalog);
        replies.forEach((reply, position) => {
          if (reply[0] === 'done')
            records.set(group[position]!.reservationId, { accountId, record: parseRecord(reply[1]!) });
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

  /** Finishes in Redis; a lease that may be short of what Postgres holds is topped up first (R10). */
  async function finishInRedis(
    accountId: string,
    items: FinishItem[],
    forgotten: boolean,
    catalog: Map<string, AliasInfo>,
  ): Promise<Reply[]> {
    const replies = await runFinish(accountId, items, forgotten, catalog, true);
    if (replies[0]?.[0] !== 'topup') return replies;
    await leases.topUp(accountId, replies[0][1]!);
    return runFinish(accountId, items, forgotten, catalog, false);
  }

  function runFinish(
    accountId: string,
    items: FinishItem[],
    forgotten: boolean,
    catalog: Map<string, AliasInfo>,
    topupAllowed: boolean,
  ): Promise<Reply[]> {
    const names = store.keysOf(accountId);
    return store.run('hotFinish', {
      keys: { lease: names.lease, calls: names.calls },
      args: { forgotten: forgotten ? '1' : '0', topupAllowed: topupAllowed ? '1' : '0' },
      items: items.map((item) => {
        const alias = catalog.get(item.alias);
        return {
          keys: {},
          args: {
            id: item.reservationId,
            action: item.action,
            // The input parts, ','-separated: input, 5-minute write, 1-hour write, cache read.
            usageIn:
              item.action === 'settle'
                ? [
                    item.usage.inputTokens,
                    item.usage.cacheWriteTokens ?? '0',
                    item.usage.cacheWrite1hTokens ?? '0',
                    item.usage.cacheReadTokens ?? '0',
                  ].join(',')
                : '0',
            usageOut: item.action === 'settle' ? item.usage.outputTokens : '0',
            outcome: item.outcome,
            // ioredis sends null as ''.
            httpStatus: item.httpStatus ?? '',
            keyId: item.keyId,
            alias: item.alias,
            surface: item.surface,
            inputPrice: alias?.inputPrice ?? '',
            outputPrice: alias?.outputPrice ?? '',
            created: String(Date.parse(item.occurredAt) * 1000),
          },
        };
      }),
    });
  }

  /** Charges calls Redis does not know against the open lease (opening one if needed). */
  async function finishForgotten(
    accountId: string,
    items: FinishItem[],
    catalog: Map<string, AliasInfo>,
  ): Promise<Reply[]> {
    const startedAt = performance.now();
    let waits = 0;
    for (let round = 0; round - waits < MAX_ROUNDS; round += 1) {
      const replies = await finishInRedis(accountId, items, true, catalog);
      if (!replies.some((reply) => reply[0] === 'cold')) return replies;
      if ((await leases.open(accountId, [])) === 'busy' && (await waitForLease(startedAt, waits))) waits += 1;
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
      // A settle there may draw beyond what the call holds (R10, R11): what the lease holds free
      // comes back to Postgres first, under the same lock, so it is charged, not written off.
      const rows = await deps.db.transaction().execute(async (trx) => {
        for (const accountId of [...new Set(inPostgres.map((item) => item.accountId))].sort()) {
          await repository.lockAccountRow(trx, accountId);
          await leases.recallInTransaction(trx, accountId);
        }
        return repository.finishBatchIn(trx, inPostgres.map(finishRowOfItem));
      });
      for (const row of rows) results.set(row.reservation_id, finishResultOf(row));
      // A held call released there gave its amount back to Postgres: the lease may take it.
      await Promise.all(
        [...new Set(inPostgres.map((item) => item.accountId))].map((accountId) => leases.markMore(accountId)),
      );
    }
    const lost = items.filter((item) => !known.has(item.reservationId));
    for (const [accountId, group] of groupBy(lost, (item) => item.accountId)) {
      const replies = await finishForgotten(accountId, group, catalog);
      replies.forEach((reply, position) => {
        if (reply[0] === 'done')
          records.set(group[position]!.reservationId, { accountId, record: parseRecord(reply[1]!) });
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
            TOMBSTONE_TTL_MS,
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

  /** The account's lease as Redis holds it now (null: none), for balance reports. */
  function view(accountId: string): Promise<LeaseView | null> {
    return store.readLease(accountId);
  }

  /**
   * After a balance change that recalled the lease and then rolled back (refused): Redis gave back
   * what Postgres still counts as leased. Syncing the lease with Postgres makes it free again.
   */
  async function resync(accountId: string): Promise<void> {
    const lease = await store.readLease(accountId);
    if (lease) await leases.topUp(accountId, lease.leaseId);
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
      const reply = await store.run('hotSweep', {
        keys: { lease: names.lease, calls: names.calls, claim: names.claim },
        args: {
          leaseId: lease.id,
          timeoutMs: deps.reservationTimeoutMs,
          unwrittenMs: deps.writeGraceMs,
          idleMs: deps.idleMs,
        },
      });
      if (reply[0] === 'closed' || (reply[0] === 'absent' && Number(reply[1]) === 0)) {
        await deps.db.transaction().execute(async (trx) => {
          await repository.lockAccountRow(trx, lease.account_id);
          await sql`select tollgate_hot_close(${lease.id}::uuid, ${reply[0] === 'closed' ? 'idle' : 'orphaned'})`.execute(
            trx,
          );
        });
        closed += 1;
      } else if (reply[0] === 'open' && reply.length > 1) {
        const records = reply
          .slice(1)
          .map((text) => ({ accountId: lease.account_id, record: parseRecord(text) }));
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
    recallInTransaction: leases.recallInTransaction,
    markMore: leases.markMore,
    resync,
    view,
    sweep,
    catalogChanged: () => aliases.drop(),
    caps: createHotCaps(store),
    close: () => store.close(),
  };
}

export type HotTier = ReturnType<typeof createHotTier>;

function refusal(item: ReserveItem, code: ReserveRefusalCode, retryMs = 0, budget?: string): ReserveResult {
  return {
    ok: false,
    reservationId: item.reservationId,
    code,
    message: ERROR_CATALOG[code].message,
    ...(code === 'rate_limit_exceeded' ? { retryAfterSeconds: Math.max(1, Math.ceil(retryMs / 1000)) } : {}),
    ...budgetOf(budget),
  };
}

/** The script's `limit:remaining:ms` (empty when it checked no limits). */
function budgetOf(text: string | undefined): { budget?: RequestBudget } {
  if (!text) return {};
  const [limit, remaining, resetMs] = text.split(':').map(Number) as [number, number, number];
  return { budget: { limit, remaining, resetSeconds: Math.ceil(resetMs / 1000) } };
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
    () => parts.clock.offsetMs?.() ?? 0,
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
