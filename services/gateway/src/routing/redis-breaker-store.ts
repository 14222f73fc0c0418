import {
  connectRedis,
  type Logger,
  type RedisConnection,
  type RedisTarget,
  redisReady,
} from '@tollgate/service-kit';
import {
  type BreakerSettings,
  type BreakerState,
  type BreakerStore,
  type Failure,
  type Stored,
  type Transition,
  viewOf,
} from './breaker-store.ts';

/**
 * Breakers shared by every gateway (docs/routing.md). One hash holds the upstreams that are open or
 * benched (JSON per upstream), one hash per upstream counts its window, one key per upstream is its
 * claimed probe; all under one hash tag, so each script stays in one Cluster slot. Every script
 * reads Redis's clock, so gateways agree on instants; each change is published on a channel and
 * every gateway keeps the states in memory: a call on healthy upstreams asks Redis nothing.
 */

const COMMON = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function load(field)
  local raw = redis.call('HGET', KEYS[1], field)
  if raw then return cjson.decode(raw) end
  return nil
end
local function fresh()
  return {state = 'closed', ['until'] = 0, benchUntil = 0, trips = 0, reason = false, cause = false,
    failures = 0, calls = 0, since = now}
end
local function announce(channel, field, to, stored)
  if stored then redis.call('HSET', KEYS[1], field, cjson.encode(stored)) else redis.call('HDEL', KEYS[1], field) end
  local message = cjson.encode({key = field, to = to, stored = stored or false, now = now})
  redis.call('PUBLISH', channel, message)
  return message
end
`;

/**
 * KEYS: 1 states, 2 window, 3 probe. ARGV: 1 field, 2 successes, 3 probe (1/0), 4 retry-after ms
 * (0: none), 5 cause, 6 failures in a row, 7 error per cent, 8 window ms, 9 min calls, 10 open ms,
 * 11 max open ms, 12 max retry-after ms, 13 channel. Returns the transition's message, or false.
 */
const FAILED = `${COMMON}
local field, successes, probe = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'
local retryAfter, cause = tonumber(ARGV[4]), ARGV[5]
local window = tonumber(ARGV[8])
local bucketMs = math.max(1, math.floor(window / 10))
local bucket = math.floor(now / bucketMs)
if successes > 0 then
  redis.call('HINCRBY', KEYS[2], 's:' .. bucket, successes)
  redis.call('HSET', KEYS[2], 'consecutive', 0)
end
redis.call('HINCRBY', KEYS[2], 'f:' .. bucket, 1)
local consecutive = redis.call('HINCRBY', KEYS[2], 'consecutive', 1)
redis.call('PEXPIRE', KEYS[2], window * 2)
local failures, calls = 0, 0
local cells = redis.call('HGETALL', KEYS[2])
for i = 1, #cells, 2 do
  local name = cells[i]
  if name ~= 'consecutive' then
    local at = tonumber(string.sub(name, 3))
    if at <= bucket - 10 then
      redis.call('HDEL', KEYS[2], name)
    else
      local n = tonumber(cells[i + 1])
      calls = calls + n
      if string.sub(name, 1, 1) == 'f' then failures = failures + n end
    end
  end
end
local stored = load(field)
local to = false
if retryAfter > 0 then
  local bench = now + math.min(retryAfter, tonumber(ARGV[12]))
  if not stored or stored.benchUntil < bench then
    stored = stored or fresh()
    stored.benchUntil = bench
    stored.cause = cause
    to = 'benched'
  end
end
local function span(trips)
  return math.min(tonumber(ARGV[10]) * 2 ^ math.max(0, trips - 1), tonumber(ARGV[11]))
end
if stored and stored.state == 'open' then
  if probe then
    stored.trips = stored.trips + 1
    stored['until'] = now + span(stored.trips)
    stored.reason = 'probe_failed'
    stored.cause = cause
    stored.since = now
    redis.call('DEL', KEYS[3])
    to = 'reopened'
  end
else
  local reason = false
  if consecutive >= tonumber(ARGV[6]) then
    reason = 'consecutive_failures'
  elseif calls >= tonumber(ARGV[9]) and failures * 100 >= tonumber(ARGV[7]) * calls then
    reason = 'error_rate'
  end
  if reason then
    stored = stored or fresh()
    stored.state = 'open'
    stored.trips = stored.trips + 1
    stored['until'] = now + span(stored.trips)
    stored.reason = reason
    stored.cause = cause
    stored.failures = failures
    stored.calls = calls
    stored.since = now
    to = 'open'
  end
end
if not to then return false end
return announce(ARGV[13], field, to, stored)
`;

/** KEYS: 1 states, then one window per field. ARGV: 1 window ms, then field, count pairs. */
const SUCCEEDED = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local bucket = math.floor(now / math.max(1, math.floor(window / 10)))
for i = 2, #KEYS do
  redis.call('HINCRBY', KEYS[i], 's:' .. bucket, tonumber(ARGV[i * 2 - 1]))
  redis.call('HSET', KEYS[i], 'consecutive', 0)
  redis.call('PEXPIRE', KEYS[i], window * 2)
end
return 0
`;

/** KEYS: 1 states, 2 probe. ARGV: 1 field, 2 probe ttl ms. 1: the caller sends the probe. */
const CLAIM = `${COMMON}
local stored = load(ARGV[1])
if not stored or stored.state ~= 'open' or stored['until'] > now then return 0 end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', tonumber(ARGV[2])) then return 1 end
return 0
`;

/** KEYS: 1 states, 2 window, 3 probe. ARGV: 1 field, 2 channel. */
const CLOSE = `${COMMON}
redis.call('DEL', KEYS[2], KEYS[3])
local stored = load(ARGV[1])
if not stored or stored.state ~= 'open' then return false end
if stored.benchUntil > now then
  local kept = fresh()
  kept.benchUntil = stored.benchUntil
  kept.cause = stored.cause
  return announce(ARGV[2], ARGV[1], 'closed', kept)
end
return announce(ARGV[2], ARGV[1], 'closed', nil)
`;

/** KEYS: 1 states. Returns {now, field, json, ...}, dropping benches that ended. */
const SNAPSHOT = `${COMMON}
local all = redis.call('HGETALL', KEYS[1])
local result = {tostring(now)}
for i = 1, #all, 2 do
  local stored = cjson.decode(all[i + 1])
  if stored.state == 'closed' and stored.benchUntil <= now then
    redis.call('HDEL', KEYS[1], all[i])
  else
    table.insert(result, all[i])
    table.insert(result, all[i + 1])
  end
end
return result
`;

/** How long a breaker command waits for a (re)connecting Redis before it is dropped. */
const CONNECT_WAIT_MS = 500;

interface Message {
  key: string;
  to: Transition['to'];
  stored:
    | (Omit<Stored, 'reason' | 'cause'> & { reason: Stored['reason'] | false; cause: string | false })
    | false;
  now: number;
}

function transitionOf(raw: string): Transition {
  const message = JSON.parse(raw) as Message;
  return {
    key: message.key,
    to: message.to,
    state: message.stored ? viewAt(message.stored, message.now) : null,
  };
}

function viewAt(stored: Exclude<Message['stored'], false>, now: number): BreakerState {
  return viewOf({ ...stored, reason: stored.reason || null, cause: stored.cause || null }, now);
}

export function createRedisBreakerStore(
  target: string | RedisTarget,
  prefix: string,
  settings: BreakerSettings,
  logger: Logger,
): BreakerStore {
  const redis: RedisConnection = connectRedis(target, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  redis.on('error', (error) => logger.debug({ err: error }, 'breaker redis error'));
  const subscriber = connectRedis(target, { maxRetriesPerRequest: null });
  subscriber.on('error', (error) => logger.debug({ err: error }, 'breaker subscriber error'));
  const tag = `${prefix}{routing}`;
  const states = `${tag}:breakers`;
  const windowKey = (key: string) => `${tag}:window:${key}`;
  const probeKey = (key: string) => `${tag}:probe:${key}`;
  const channel = `${prefix}routing:breakers`;
  const listeners: Array<(transition: Transition) => void> = [];
  const resyncs: Array<() => void> = [];

  let connectedBefore = false;
  subscriber.on('ready', () => {
    if (connectedBefore) for (const listener of resyncs) listener();
    connectedBefore = true;
  });
  const listening = subscriber.subscribe(channel).then(
    () => {},
    (error: unknown) => logger.warn({ err: error }, 'could not subscribe to breaker changes'),
  );
  subscriber.on('message', (_channel, raw: string) => {
    let transition: Transition;
    try {
      transition = transitionOf(raw);
    } catch {
      logger.warn('ignored a malformed breaker event');
      return;
    }
    for (const listener of listeners) listener(transition);
  });

  // Never a queue of commands behind a Redis that is away: a breaker update is dropped instead.
  const call = async (script: string, keys: string[], args: string[]): Promise<unknown> => {
    if (!(await redisReady(redis, CONNECT_WAIT_MS))) throw new Error('breaker redis not connected');
    return redis.eval(script, keys.length, ...keys, ...args);
  };

  const settingsArgs = [
    settings.failures,
    settings.errorPercent,
    settings.windowMs,
    settings.minCalls,
    settings.openMs,
    settings.maxOpenMs,
    settings.maxRetryAfterMs,
  ].map(String);

  return {
    kind: 'redis',
    listening,
    async failed(key: string, failure: Failure) {
      const raw = (await call(
        FAILED,
        [states, windowKey(key), probeKey(key)],
        [
          key,
          String(failure.successes),
          failure.probe ? '1' : '0',
          String(failure.retryAfterMs ?? 0),
          failure.cause,
          ...settingsArgs,
          channel,
        ],
      )) as string | null;
      // The subscriber hears it too; the caller acts on it now rather than after the round trip.
      return raw ? transitionOf(raw) : null;
    },
    async succeeded(counts) {
      if (counts.size === 0) return;
      const keys = [...counts.keys()];
      await call(
        SUCCEEDED,
        [states, ...keys.map(windowKey)],
        [String(settings.windowMs), ...keys.flatMap((key) => [key, String(counts.get(key))])],
      );
    },
    async claimProbe(key) {
      const won = await call(CLAIM, [states, probeKey(key)], [key, String(settings.probeTimeoutMs)]);
      return won === 1;
    },
    async close(key) {
      const raw = (await call(CLOSE, [states, windowKey(key), probeKey(key)], [key, channel])) as
        | string
        | null;
      return raw ? transitionOf(raw) : null;
    },
    async snapshot() {
      const reply = (await call(SNAPSHOT, [states], [])) as string[];
      const now = Number(reply[0]);
      const result = new Map<string, BreakerState>();
      for (let index = 1; index < reply.length; index += 2) {
        result.set(reply[index]!, viewAt(JSON.parse(reply[index + 1]!), now));
      }
      return result;
    },
    onTransition(listener) {
      listeners.push(listener);
    },
    onResync(listener) {
      resyncs.push(listener);
    },
    async close_() {
      subscriber.disconnect();
      redis.disconnect();
    },
  };
}
