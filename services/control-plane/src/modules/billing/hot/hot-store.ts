import { AppError } from '@tollgate/errors';
import {
  accountTag,
  connectRedis,
  type Logger,
  type RedisConnection,
  type RedisTarget,
  redisReady,
} from '@tollgate/service-kit';
import type { CalendarPeriod, CapCounter, CapCounts } from '../../spend-caps/spend-caps.counting.ts';
import { CAP_FINISH_LUA, CAP_RESERVE_LUA, CAP_UNCOUNT_LUA } from './hot-caps.lua.ts';
import { encodeCall, type ScriptCall, type ScriptName, type ScriptReplies } from './hot-layout.ts';
import { SCRIPT_SOURCES } from './hot-scripts.ts';

/** Where Redis keeps one account's part of the hot tier (see hot-layout.ts). */
export function hotKeys(prefix: string, accountId: string) {
  const base = `${prefix}hot:${accountTag(accountId)}`;
  return {
    lease: base,
    calls: `${base}:calls`,
    account: `${base}:acct`,
    claim: `${base}:claim`,
    capTimes: `${base}:capt`,
    capCalls: `${base}:capc`,
    capCounters: `${base}:capn`,
    capWindows: `${base}:capw`,
    key: (keyId: string) => `${base}:k:${keyId}`,
  };
}

export type HotKeys = ReturnType<typeof hotKeys>;

/** One source of a lease as Redis gets it: 'c' is the credit. */
export interface LeaseSource {
  id: string;
  net: string;
  expiresAt: string;
  aliases: string;
  /** '1': a weighted entitlement (R2b), whose tokens cost the alias's package rate. */
  weighted: string;
}

export interface LeaseWrite {
  mode: 'install' | 'sync';
  token: string;
  leaseId: string;
  version: string;
  /** The source the lease could not take whole at its bound (R21); '' when it holds everything. */
  cut: string;
  sources: LeaseSource[];
}

/** A lease as Redis holds it now, per source: what is free and what calls in flight hold. */
export interface LeaseView {
  leaseId: string;
  sources: Map<string, { free: bigint; inFlight: bigint }>;
}

type Script = (keyCount: number, ...args: Array<string | number>) => Promise<unknown>;
/** The spend caps' scripts (hot-caps.lua.ts), beside the hot tier's own. */
const CAP_SCRIPTS = {
  hotCapReserve: CAP_RESERVE_LUA,
  hotCapUncount: CAP_UNCOUNT_LUA,
  hotCapFinish: CAP_FINISH_LUA,
} as const;

/** How long a call waits for a (re)connecting Redis before it is refused. */
const CONNECT_WAIT_MS = 500;

/**
 * The hot tier's Redis: one connection (or cluster client), every script registered once and
 * sent by its hash. Commands of concurrent calls leave in one write (auto-pipelining). While Redis
 * is unreachable every call fails at once with rate_limiter_unavailable: nothing is reserved.
 */
/**
 * clockOffsetMs: how far the control plane's clock is from real time (0 but in tests); the
 * scripts move Redis TIME, the hot tier's one clock (R16), by as much.
 */
export function createHotStore(
  target: RedisTarget,
  prefix: string,
  logger: Logger,
  clockOffsetMs: () => number = () => 0,
) {
  const redis: RedisConnection = connectRedis(target, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 1_000,
    // Commands of concurrent calls leave in one write. Not on a cluster: ioredis would put scripts
    // of accounts on different slots in one pipeline, which a cluster refuses.
    enableAutoPipelining: !target.cluster,
  });
  redis.on('error', (error) => logger.warn({ err: error }, 'hot tier: redis error'));
  for (const [name, lua] of Object.entries(SCRIPT_SOURCES)) redis.defineCommand(name, { lua });
  for (const [name, lua] of Object.entries(CAP_SCRIPTS)) redis.defineCommand(name, { lua });
  const scripts = redis as unknown as Record<ScriptName, Script>;
  const capScripts = redis as unknown as Record<keyof typeof CAP_SCRIPTS, Script>;

  const connected = () => redisReady(redis, CONNECT_WAIT_MS);

  /** Runs a script with its KEYS and ARGV by name (hot-layout.ts). */
  async function run<S extends ScriptName>(script: S, call: ScriptCall<S>): Promise<ScriptReplies[S]> {
    if (redis.status !== 'ready' && !(await connected())) throw new AppError('rate_limiter_unavailable');
    const { keys, args } = encodeCall(script, call, clockOffsetMs());
    try {
      return (await scripts[script](keys.length, ...keys, ...args)) as ScriptReplies[S];
    } catch (error) {
      throw new AppError('rate_limiter_unavailable', { cause: error });
    }
  }

  /** Runs a spend-cap script with its KEYS and ARGV as the script's comment lists them. */
  async function runCaps<T>(
    script: keyof typeof CAP_SCRIPTS,
    keys: string[],
    args: Array<string | number>,
  ): Promise<T> {
    if (redis.status !== 'ready' && !(await connected())) throw new AppError('rate_limiter_unavailable');
    try {
      return (await capScripts[script](keys.length, ...keys, ...args)) as T;
    } catch (error) {
      throw new AppError('rate_limiter_unavailable', { cause: error });
    }
  }

  return {
    prefix,
    keysOf: (accountId: string) => hotKeys(prefix, accountId),
    run,
    runCaps,
    async writeLease(
      accountId: string,
      write: LeaseWrite,
    ): Promise<'installed' | 'synced' | 'lost' | 'stale'> {
      const keys = hotKeys(prefix, accountId);
      return run('hotLease', {
        keys: { lease: keys.lease, claim: keys.claim },
        args: {
          mode: write.mode,
          token: write.token,
          leaseId: write.leaseId,
          version: write.version,
          cut: write.cut,
        },
        items: write.sources.map((source) => ({ keys: {}, args: source })),
      });
    },
    async claim(accountId: string, token: string, ttlMs: number, mode: 'claim' | 'verify') {
      const keys = hotKeys(prefix, accountId);
      return run('hotClaim', {
        keys: { lease: keys.lease, claim: keys.claim },
        args: { token, ttlMs, mode },
      });
    },
    /** `entry`: the entry's text, `version|...` (hot-entries.ts). */
    async writeEntry(key: string, entry: string, ttlMs: number, now: number) {
      return run('hotEntry', {
        keys: { entry: key },
        args: { entry, version: entry.slice(0, entry.indexOf('|')), ttlMs, now },
      });
    },
    async readLease(accountId: string): Promise<LeaseView | null> {
      if (redis.status !== 'ready' && !(await connected())) throw new AppError('rate_limiter_unavailable');
      const hash = await redis.hgetall(hotKeys(prefix, accountId).lease);
      if (!hash.lease) return null;
      const sources = new Map<string, { free: bigint; inFlight: bigint }>();
      // Every source the lease ever held, not only those it still draws from: what a call gives
      // back to an entitlement since expired or refunded is free there, held by no call (R9).
      for (const field of Object.keys(hash).filter((name) => name.startsWith('r:'))) {
        const id = field.slice(2);
        sources.set(id, { free: BigInt(hash[field] ?? '0'), inFlight: BigInt(hash[`h:${id}`] ?? '0') });
      }
      return { leaseId: hash.lease, sources };
    },
    /**
     * What the account's calls counted against spend caps (hot-caps.lua.ts): the calls since
     * `callsSince` (none when null; released ones not), the sums of windows ending after `countersSince`.
     */
    async readCapCounts(
      accountId: string,
      since: { callsSince: number | null; countersSince: number },
    ): Promise<CapCounts> {
      if (redis.status !== 'ready' && !(await connected())) throw new AppError('rate_limiter_unavailable');
      const keys = hotKeys(prefix, accountId);
      const [listed, windows, sums] = await Promise.all([
        since.callsSince === null
          ? Promise.resolve([] as string[])
          : redis.zrangebyscore(keys.capTimes, since.callsSince, '+inf', 'WITHSCORES'),
        redis.hgetall(keys.capWindows),
        redis.hgetall(keys.capCounters),
      ]);
      const ids = listed.filter((_, index) => index % 2 === 0);
      const values = ids.length === 0 ? [] : await redis.hmget(keys.capCalls, ...ids);
      const calls = values.flatMap((value, index) => {
        const [keyId, credits, tokens, , state] = (value ?? '').split('|');
        if (!value || state === 'x') return [];
        return [
          {
            keyId: keyId as string,
            at: Number(listed[index * 2 + 1]),
            credits: BigInt(credits ?? '0'),
            tokens: BigInt(tokens ?? '0'),
          },
        ];
      });
      const counters = new Map<string, CapCounter>();
      for (const [field, value] of Object.entries(sums)) {
        const [period, start, subject, unit] = field.split('|');
        // The rolling window's sums (5h|...) are the judge's; its calls are read above.
        if (period === '5h') continue;
        const end = Number(windows[`${period}|${start}`]);
        if (!(end > since.countersSince)) continue;
        const name = `${period}|${start}|${subject}`;
        let counter = counters.get(name);
        if (!counter) {
          counter = {
            keyId: subject === '' ? null : (subject as string),
            period: period as CalendarPeriod,
            start: Number(start),
            end,
            credits: 0n,
            tokens: 0n,
          };
          counters.set(name, counter);
        }
        if (unit === 'c') counter.credits = BigInt(value);
        else counter.tokens = BigInt(value);
      }
      return { calls, counters: [...counters.values()] };
    },
    /**
     * Forgets finished calls once Postgres has them; a release or hold of a call Redis never saw
     * stays as a tombstone for `tombstoneMs`.
     */
    async written(accountId: string, ids: string[], tombstoneMs: number): Promise<void> {
      if (ids.length === 0) return;
      await run('hotWritten', {
        keys: { calls: hotKeys(prefix, accountId).calls },
        args: { tombstoneMs },
        items: ids.map((id) => ({ keys: {}, args: { id } })),
      });
    },
    async close(): Promise<void> {
      redis.disconnect();
    },
  };
}

export type HotStore = ReturnType<typeof createHotStore>;
