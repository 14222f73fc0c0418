import { AppError } from '@tollgate/errors';
import type { FinishBatchRequest, FinishBatchResponse, FinishItem, FinishResult } from '@tollgate/schemas';
import { finishResultOf, finishRowOfItem } from '../billing.rows.ts';
import * as repository from '../engine.repository.ts';
import type { AliasInfo } from './hot-aliases.ts';
import {
  type FinishedRecord,
  PERSIST_SQL,
  type PersistItem,
  type PersistRoute,
  parseRecord,
  persistColumns,
  persistItemOf,
} from './hot-records.ts';
import {
  groupBy,
  type HotParts,
  MAX_ROUNDS,
  type Reply,
  TOMBSTONE_TTL_MS,
  waitForLease,
} from './hot-shared.ts';

/**
 * How long written calls wait before Redis is told to forget them: far below
 * HOT_WRITE_GRACE_SECONDS, after which the reconciler would write them again (a replay).
 */
const FORGET_AFTER_MS = 50;

/**
 * Finishes in the hot tier (docs/billing/hot-tier.md): applied in Redis (lua/finish.lua), then
 * written to Postgres in one durable transaction per batch before the gateway is told; Redis
 * forgets the written calls a moment later, off the answer's path.
 */
export function createHotFinish({ deps, store, leases, aliases }: HotParts) {
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
      const stale = await persist([...records.values()], results, request.items);
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
            packageRate: alias?.packageRate ?? '1',
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
    routes: readonly PersistRoute[] = [],
  ): Promise<string[]> {
    const items: PersistItem[] = entries.map(({ accountId, record }) => persistItemOf(accountId, record));
    const [row] = await deps.prepared.run<{ results: unknown }>(
      'tollgate_hot_persist',
      PERSIST_SQL,
      persistColumns(items, routes),
    );
    const stale: string[] = [];
    for (const result of repository.parsePersistResults(row?.results, items.length)) {
      if ('stale' in result) stale.push(result.reservation_id);
      else results.set(result.reservation_id, finishResultOf(result));
    }
    // A settled call is final (R14): until Redis forgets it, a repeat is answered from there with
    // the same result. A released or held one may still be settled, which only Postgres decides
    // (R11, R13): Redis forgets it before the answer, so a later settle finds it there.
    const now = new Map<string, string[]>();
    for (const { accountId, record } of entries) {
      if (stale.includes(record.id)) continue;
      add(record.status === 'settled' ? unforgotten : now, accountId, record.id);
    }
    if (unforgotten.size > 0) forgetTimer ??= setTimeout(() => void forgetWritten(), FORGET_AFTER_MS).unref();
    await forget(now);
    return stale;
  }

  /**
   * Settled calls Postgres has and Redis has not been told to forget yet, by account. Forgetting
   * them need not delay the answer, so it waits a moment, and one Redis call per account forgets
   * what many batches wrote meanwhile.
   */
  const unforgotten = new Map<string, string[]>();
  let forgetTimer: NodeJS.Timeout | undefined;

  function add(groups: Map<string, string[]>, accountId: string, id: string): void {
    const ids = groups.get(accountId);
    if (ids) ids.push(id);
    else groups.set(accountId, [id]);
  }

  /** Tells Redis to forget every written call now (the reconciler's pass, shutdown). */
  async function forgetWritten(): Promise<void> {
    clearTimeout(forgetTimer);
    forgetTimer = undefined;
    const groups = new Map(unforgotten);
    unforgotten.clear();
    await forget(groups);
  }

  async function forget(groups: Map<string, string[]>): Promise<void> {
    await Promise.all(
      [...groups].map(([accountId, ids]) =>
        store.written(accountId, ids, TOMBSTONE_TTL_MS).catch((error: unknown) => {
          deps.logger.warn(
            { err: error, accountId },
            'hot tier: could not drop written calls (written again later)',
          );
        }),
      ),
    );
  }

  return { finish, persist, forgetWritten };
}
