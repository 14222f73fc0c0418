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

/** A SHA-256 digest in base64url: what names one conversation's affinity record. */
const AFFINITY_HASH = /^[A-Za-z0-9_-]{43}$/;

/**
 * The name of a conversation's prompt-cache affinity record (docs/routing.md), after the
 * gateway's key prefix: under the account's hash tag, so that the control plane's reserve script,
 * which runs in that tag's slot, can read it with the reservation.
 */
export function affinityRecordName(accountId: string, hash: string): string {
  return `affinity:${accountTag(accountId)}:${hash}`;
}

/** Whether `name` (any prefix before it) is an affinity record of this account, as named above. */
export function isAffinityRecordOf(name: string, accountId: string): boolean {
  const head = affinityRecordName(accountId, '');
  const at = name.lastIndexOf(head);
  return at !== -1 && AFFINITY_HASH.test(name.slice(at + head.length));
}

/**
 * Lua functions both scripts include. `l` is one call's limits: keyRate/planRate (key prefixes,
 * the window's number appended), keyLeases/planLeases (sorted sets of leases scored by expiry),
 * keyRpm, planRpm (0 = none), window (ms), keySlots (0 = takes no slot), planSlots (0 = none).
 * Fixed windows keyed by the window's number on Redis's clock; a lease whose holder died falls out
 * of its set by itself. Few commands per call, since a script pays for each one.
 *
 * rateTake(l, now) counts the call against both rates: nil, or {1|2, retry ms} when a ceiling is
 * reached (the call is then not counted); either way it leaves in l.budget the tighter of the two
 * request budgets, {limit, remaining, ms to the window's end}, for the x-ratelimit-* headers.
 * rateGive takes a count back. slotsFree: nil when a slot
 * is free under both ceilings, else {3|4}. slotTake holds one under `id` for `ttl` ms.
 */
export const LIMITS_LUA = `
local function rateGive(l, now)
  local index = math.floor(now / l.window)
  redis.call('DECR', l.keyRate .. index)
  if l.planRpm > 0 then redis.call('DECR', l.planRate .. index) end
end

local function rateTake(l, now)
  local index = math.floor(now / l.window)
  local retry = l.window - (now % l.window)
  local key = l.keyRate .. index
  local count = redis.call('INCR', key)
  if count == 1 then redis.call('PEXPIRE', key, l.window) end
  if count > l.keyRpm then
    redis.call('DECR', key)
    l.budget = {l.keyRpm, 0, retry}
    return {1, retry}
  end
  l.budget = {l.keyRpm, l.keyRpm - count, retry}
  if l.planRpm > 0 then
    local plan = l.planRate .. index
    count = redis.call('INCR', plan)
    if count == 1 then redis.call('PEXPIRE', plan, l.window) end
    if count > l.planRpm then
      redis.call('DECR', plan)
      redis.call('DECR', key)
      l.budget = {l.planRpm, 0, retry}
      return {2, retry}
    end
    if l.planRpm - count < l.budget[2] then l.budget = {l.planRpm, l.planRpm - count, retry} end
  end
  return nil
end

local function slotFull(set, slots, now)
  if redis.call('ZCARD', set) < slots then return false end
  -- Full as counted: drop the leases whose holder stopped renewing them, then count again.
  redis.call('ZREMRANGEBYSCORE', set, '-inf', now)
  return redis.call('ZCARD', set) >= slots
end

local function slotsFree(l, now)
  if l.keySlots > 0 and slotFull(l.keyLeases, l.keySlots, now) then return {3, 0} end
  if l.keySlots > 0 and l.planSlots > 0 and slotFull(l.planLeases, l.planSlots, now) then return {4, 0} end
  return nil
end

local function slotTake(l, now, id, ttl)
  if l.keySlots == 0 then return end
  if l.planSlots > 0 then
    redis.call('ZADD', l.planLeases, now + ttl, id)
    redis.call('PEXPIRE', l.planLeases, ttl)
  end
  redis.call('ZADD', l.keyLeases, now + ttl, id)
  redis.call('PEXPIRE', l.keyLeases, ttl)
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
