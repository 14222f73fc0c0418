import { ERROR_CATALOG, toAppError } from '@tollgate/errors';
import type {
  RequestBudget,
  ReserveBatchRequest,
  ReserveBatchResponse,
  ReservedLeg,
  ReserveItem,
  ReserveRefusalCode,
  ReserveResult,
} from '@tollgate/schemas';
import { isAffinityRecordOf, limiterKeys } from '@tollgate/service-kit';
import { lookupHashHexOf } from '../../api-keys/key-crypto.ts';
import { reserveResultOf, reserveRowOf } from '../billing.rows.ts';
import * as repository from '../engine.repository.ts';
import type { AliasInfo } from './hot-aliases.ts';
import { loadEntries } from './hot-entries.ts';
import { LEASE_CAP } from './hot-leases.ts';
import { parseLegs } from './hot-records.ts';
import { type HotParts, MAX_ROUNDS, type Reply, sleep, waitForLease } from './hot-shared.ts';
import type { HotStore } from './hot-store.ts';

/**
 * Reservations at least this large are made in Postgres, against what the lease gives back: a
 * lease never holds more (R21), and estimates below it keep the scripts' sums exact.
 */
const HOT_MAX_ESTIMATE = LEASE_CAP;
/** A call short of balance asks Postgres for more at most this often (unless told it has more). */
const TOPUP_EVERY_MS = 1_000;

/**
 * Reservations in the hot tier (docs/billing/hot-tier.md): answered from Redis against the
 * account's lease, the key, the account, the alias and the limits checked in the same script
 * (lua/reserve.lua); a lease is opened, entries read or the lease topped up between rounds.
 */
export function createHotReserve({ deps, store, leases, aliases }: HotParts) {
  const now = () => deps.clock.now().getTime();

  async function reserve(request: ReserveBatchRequest): Promise<ReserveBatchResponse> {
    const catalog = await aliases.get();
    const results: ReserveResult[] = new Array(request.items.length);
    const byAccount = new Map<string, number[]>();
    const inPostgres: number[] = [];
    // Checked once per call, whatever the rounds its account's script takes.
    const affinities = request.items.map(readableAffinity);
    request.items.forEach((item, index) => {
      const estimate = BigInt(item.estimate.inputTokens) + BigInt(item.estimate.outputTokens);
      if (estimate >= HOT_MAX_ESTIMATE) inPostgres.push(index);
      else byAccount.set(item.accountId, [...(byAccount.get(item.accountId) ?? []), index]);
    });
    await Promise.all([
      ...[...byAccount].map(([accountId, indexes]) =>
        reserveForAccount(accountId, indexes, request, catalog, results, affinities),
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
    affinities: ReadonlyArray<ReserveItem['affinity']>,
  ): Promise<void> {
    const names = store.keysOf(accountId);
    let pending = indexes;
    let topupAllowed = true;
    // Rounds spent waiting for a lease another request is opening count in time, not in rounds.
    const startedAt = performance.now();
    let waits = 0;
    // Calls the lease cannot cover while the account has more than its bound (R21).
    const inPostgres: number[] = [];
    try {
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
            items: pending.map((index) => {
              const item = request.items[index]!;
              return {
                keys: reserveKeys(names, item, request, affinities[index]),
                args: reserveArgs(item, request, catalog, affinities[index]),
              };
            }),
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
              results[index] = granted(item, reply, catalog, request, affinities[index]);
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
            case 'postgres':
              inPostgres.push(index);
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
    } finally {
      if (inPostgres.length > 0) await reserveInPostgres(inPostgres, request, results);
    }
  }

  function reserveKeys(
    names: ReturnType<HotStore['keysOf']>,
    item: ReserveItem,
    request: ReserveBatchRequest,
    affinity: ReserveItem['affinity'],
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
      // A record of another slot cannot be read in this script (Redis Cluster): the lease stands in.
      affinity: affinity?.record ?? names.lease,
    };
  }

  function reserveArgs(
    item: ReserveItem,
    request: ReserveBatchRequest,
    catalog: Map<string, AliasInfo>,
    affinity: ReserveItem['affinity'],
  ) {
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
      lookupHash: lookupHashHexOf(deps.keyPepper, item.keyDigest),
      alias: item.alias,
      aliasState,
      surface: item.surface,
      estimateIn: item.estimate.inputTokens,
      estimateOut: item.estimate.outputTokens,
      inputPrice: alias?.inputPrice ?? '',
      outputPrice: alias?.outputPrice ?? '',
      packageRate: alias?.packageRate ?? '1',
      keyRpm: limits ? limits.keyRequestsPerMinute : '',
      keyConcurrency: limits ? limits.keyConcurrency : '',
      planRpm: limits?.plan?.requestsPerMinute ?? '',
      planConcurrency: limits?.plan?.concurrency ?? '',
      windowMs: request.limiter?.windowMs ?? 0,
      affinityTtlMs: affinity?.ttlMs ?? '',
    };
  }

  function granted(
    item: ReserveItem,
    reply: Reply,
    catalog: Map<string, AliasInfo>,
    request: ReserveBatchRequest,
    affinity: ReserveItem['affinity'],
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
      legs: reservedLegsOf(reply[1] ?? ''),
      limited: item.limits !== undefined && request.limiter !== undefined,
      ...budgetOf(reply[4]),
      ...(affinity ? { pinned: reply[5] || null } : {}),
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

  return reserve;
}

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

/**
 * The item's affinity record when the reserve script may read it: one of the call's own account
 * (in the script's slot; never one of the hot tier's own keys).
 */
function readableAffinity(item: ReserveItem): ReserveItem['affinity'] {
  return item.affinity && isAffinityRecordOf(item.affinity.record, item.accountId)
    ? item.affinity
    : undefined;
}

/** The script's `limit:remaining:ms` (empty when it checked no limits). */
function budgetOf(text: string | undefined): { budget?: RequestBudget } {
  if (!text) return {};
  const [limit, remaining, resetMs] = text.split(':').map(Number) as [number, number, number];
  return { budget: { limit, remaining, resetSeconds: Math.ceil(resetMs / 1000) } };
}

/** The record's legs as the gateway reads them (its receipts: chargeWithinLegs). */
function reservedLegsOf(text: string): ReservedLeg[] {
  return parseLegs(text).map((leg) =>
    leg.source === 'entitlement'
      ? { source: 'entitlement', amount: leg.amount, rate: leg.rate ?? '1' }
      : {
          source: 'credit',
          amount: leg.amount,
          price: {
            input: leg.inputPrice ?? '0',
            output: leg.outputPrice ?? '0',
            cacheRead: leg.cacheReadPrice ?? '0',
            cacheWrite: leg.cacheWritePrice ?? '0',
            cacheWrite1h: leg.cacheWrite1hPrice ?? '0',
            request: leg.requestPrice ?? '0',
          },
        },
  );
}
