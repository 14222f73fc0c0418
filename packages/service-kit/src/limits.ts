/**
 * The request-rate and concurrency limits as Redis sees them, shared by the gateway (which checks
 * them itself for calls that reserve nothing) and the control plane's hot tier (which checks them
 * in the same script that reserves). Both name the same keys and apply the same rules, so a key's
 * ceilings hold across both paths and every process.
 */

/**
 * Names of the limiter's Redis keys for one call. Every key one script touches carries the same
 * hash tag (`{...}`), so on a Redis Cluster they share a slot and the script stays one atomic
 * step. The tag is the account's: a key and its account's packages always share it, whichever
 * package a call draws from, and different accounts spread over the nodes. Callers that name no
 * account get the package's tag, else the key's.
 */
export function limiterKeys(prefix: string, keyId: string, planId: string | undefined, accountId?: string) {
  const tag = accountId ? accountTag(accountId) : planId ? `{p:${planId}}` : `{k:${keyId}}`;
  return {
    keyRate: `${prefix}rl:${tag}:k:${keyId}:`,
    planRate: `${prefix}rl:${tag}:p:${planId ?? '-'}:`,
    keyLeases: `${prefix}cc:${tag}:k:${keyId}`,
    planLeases: `${prefix}cc:${tag}:p:${planId ?? '-'}`,
    tag,
  };
}

/** The hash tag of everything Redis keeps about one account. */
export function accountTag(accountId: string): string {
  return `{a:${accountId}}`;
}

/**
 * Lua functions both scripts include. `l` is one call's limits: keyRate/planRate (key prefixes,
 * the window's number appended), keyLeases/planLeases (sorted sets of leases scored by expiry),
 * keyRpm, planRpm (0 = none), window (ms), keySlots (0 = takes no slot), planSlots (0 = none).
 * Fixed windows keyed by the window's number on Redis's clock; a lease whose holder died falls
 * out of its set by itself.
 *
 * limitsCheck(l, now) changes no count: nil when allowed, else {1|2, retryMs} for the key's or
 * the package's rate, {3|4} for their concurrency. limitsCount counts the call against both
 * rates; limitsTake also takes its slots, under `id`, for `ttl` ms.
 */
export const LIMITS_LUA = `
local function limitsCheck(l, now)
  local index = math.floor(now / l.window)
  local retry = l.window - (now % l.window)
  if tonumber(redis.call('GET', l.keyRate .. index) or '0') >= l.keyRpm then return {1, retry} end
  if l.planRpm > 0 and tonumber(redis.call('GET', l.planRate .. index) or '0') >= l.planRpm then return {2, retry} end
  if l.keySlots > 0 then
    redis.call('ZREMRANGEBYSCORE', l.keyLeases, '-inf', now)
    if redis.call('ZCARD', l.keyLeases) >= l.keySlots then return {3, 0} end
    if l.planSlots > 0 then
      redis.call('ZREMRANGEBYSCORE', l.planLeases, '-inf', now)
      if redis.call('ZCARD', l.planLeases) >= l.planSlots then return {4, 0} end
    end
  end
  return nil
end

local function limitsCount(l, now)
  local index = math.floor(now / l.window)
  if redis.call('INCR', l.keyRate .. index) == 1 then redis.call('PEXPIRE', l.keyRate .. index, l.window) end
  if l.planRpm > 0 and redis.call('INCR', l.planRate .. index) == 1 then
    redis.call('PEXPIRE', l.planRate .. index, l.window)
  end
end

local function limitsTake(l, now, id, ttl)
  if l.keySlots > 0 then
    if l.planSlots > 0 then
      redis.call('ZADD', l.planLeases, now + ttl, id)
      redis.call('PEXPIRE', l.planLeases, ttl)
    end
    redis.call('ZADD', l.keyLeases, now + ttl, id)
    redis.call('PEXPIRE', l.keyLeases, ttl)
  end
  limitsCount(l, now)
end

local function redisNowMs()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
`;

/** The limiter's verdict codes (see LIMITS_LUA) as the refusal a client gets. */
export function limitRefusal(
  verdict: number,
  retryMs: number,
  concurrencyRetryAfterSeconds: number,
): { code: 'rate_limit_exceeded' | 'concurrency_limit_exceeded'; retryAfterSeconds: number } {
  return verdict === 1 || verdict === 2
    ? { code: 'rate_limit_exceeded', retryAfterSeconds: Math.max(1, Math.ceil(retryMs / 1000)) }
    : { code: 'concurrency_limit_exceeded', retryAfterSeconds: concurrencyRetryAfterSeconds };
}
