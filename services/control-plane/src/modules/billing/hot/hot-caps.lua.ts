/**
 * Spend caps in the hot tier (docs/billing/spend-caps.md): what each call of a capped account
 * counts, kept beside its lease under the same hash tag, and judged in one script per batch so
 * that concurrent calls are counted one after another, as the account's lock orders them in
 * Postgres. The control plane computes every window (timezones are not Lua's); Redis only counts.
 *
 *   capt (zset)   reservation id -> the instant it was counted (ms, the control plane's clock)
 *   capc (hash)   reservation id -> key id|credits|tokens|prices|state, prices as
 *                 `input,output,cache read,cache write,1h cache write,per call` ('' = unpriced)
 *                 (state r: in flight, s: settled, x: released, h: held)
 *
 * Amounts are Lua numbers: exact below 2^53.
 */
const CAP_COMMON = `
local function fields(text)
  local parts = {}
  for part in string.gmatch(text .. '|', '([^|]*)|') do parts[#parts + 1] = part end
  return parts
end
local function fmt(value) return string.format('%.0f', value) end
`;

/**
 * Judges a batch of one account's calls against its caps and counts each one that fits.
 * KEYS: capt, capc. ARGV: now ms, keep-after ms (older finished calls are dropped), the earliest
 * window start, n, then per call: id, key id, credits, tokens, prices, m caps, then per cap (5): key id ('' = the account), unit (credits|tokens), start ms,
 * end ms ('' = rolling), limit.
 * Returns per call {'ok'} | {'no', cap index (1-based), used, free at ms ('' = never)}.
 */
export const CAP_RESERVE_LUA = `${CAP_COMMON}
local now, keepAfter, earliest, count = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ROLLING = 5 * 3600000
-- Finished calls no window reaches any more.
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. keepAfter)
for _, id in ipairs(old) do
  local raw = redis.call('HGET', KEYS[2], id)
  if not raw or fields(raw)[5] ~= 'r' then
    redis.call('HDEL', KEYS[2], id)
    redis.call('ZREM', KEYS[1], id)
  end
end
-- The calls the windows may count, oldest first.
local calls = {}
local listed = redis.call('ZRANGEBYSCORE', KEYS[1], earliest, '+inf', 'WITHSCORES')
-- Read in chunks: one HMGET per 500 calls rather than one HGET each.
for first = 1, #listed, 1000 do
  local ids = {}
  for i = first, math.min(first + 998, #listed - 1), 2 do ids[#ids + 1] = listed[i] end
  local raws = redis.call('HMGET', KEYS[2], unpack(ids))
  for j, raw in ipairs(raws) do
    if raw then
      local f = fields(raw)
      if f[5] ~= 'x' then
        calls[#calls + 1] = { key = f[1], credits = tonumber(f[2]), tokens = tonumber(f[3]),
                              at = tonumber(listed[first + (j - 1) * 2 + 1]) }
      end
    end
  end
end

local function usedBy(cap)
  local used = 0
  for _, call in ipairs(calls) do
    if call.at >= cap.start and (cap.stop == nil or call.at < cap.stop) and (cap.key == '' or cap.key == call.key) then
      used = used + (cap.unit == 'credits' and call.credits or call.tokens)
    end
  end
  return used
end

-- When enough frees for amount: a calendar window at its end, the rolling one call by call.
local function freeAt(cap, used, amount)
  if cap.stop ~= nil then return cap.stop end
  if amount > cap.limit then return nil end
  local left = used
  for _, call in ipairs(calls) do
    if call.at >= cap.start and (cap.key == '' or cap.key == call.key) then
      left = left - (cap.unit == 'credits' and call.credits or call.tokens)
      if left + amount <= cap.limit then return call.at + ROLLING end
    end
  end
  return nil
end

local results = {}
local a = 4
for i = 1, count do
  local id, keyId, credits, tokens = ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  local prices, m = ARGV[a + 5], tonumber(ARGV[a + 6])
  a = a + 6
  local worst = nil
  if redis.call('HEXISTS', KEYS[2], id) == 1 then m = -m end
  for j = 1, math.abs(m) do
    local cap = { key = ARGV[a + 1], unit = ARGV[a + 2], start = tonumber(ARGV[a + 3]),
                  stop = tonumber(ARGV[a + 4]), limit = tonumber(ARGV[a + 5]) }
    a = a + 5
    if m > 0 then
      local amount = cap.unit == 'credits' and credits or tokens
      local used = usedBy(cap)
      if used + amount > cap.limit then
        local at = freeAt(cap, used, amount)
        if worst == nil or (worst.at ~= nil and (at == nil or at > worst.at)) then
          worst = { index = j, used = used, at = at }
        end
      end
    end
  end
  if worst then
    results[i] = {'no', tostring(worst.index), fmt(worst.used), worst.at and fmt(worst.at) or ''}
  else
    if m > 0 then
      redis.call('ZADD', KEYS[1], now, id)
      redis.call('HSET', KEYS[2], id, table.concat({keyId, fmt(credits), fmt(tokens), prices, 'r'}, '|'))
      calls[#calls + 1] = { key = keyId, credits = credits, tokens = tokens, at = now }
    end
    results[i] = {'ok'}
  end
end
return results
`;

/**
 * Uncounts calls the reservation then refused (the balance, a limit, the key): they count nothing.
 * KEYS: capt, capc. ARGV: ids.
 */
export const CAP_UNCOUNT_LUA = `
for i = 1, #ARGV do
  redis.call('HDEL', KEYS[2], ARGV[i])
  redis.call('ZREM', KEYS[1], ARGV[i])
end
return 0
`;

/**
 * The settlement corrects what a call counts: every part it used (each at the price counted with
 * it, plus the price per call) once settled, nothing once released; a held call keeps its estimate.
 * KEYS: capt, capc. ARGV: n, then per call: id, state (s|x|h), parts
 * (`input,output,cache read,cache write,1h cache write`).
 */
export const CAP_FINISH_LUA = `${CAP_COMMON}
local function split(text)
  local parts = {}
  for part in string.gmatch(text, '([^,]+)') do parts[#parts + 1] = tonumber(part) end
  return parts
end
local count = tonumber(ARGV[1])
for i = 1, count do
  local a = 1 + (i - 1) * 3
  local id, state = ARGV[a + 1], ARGV[a + 2]
  local raw = redis.call('HGET', KEYS[2], id)
  if raw then
    local f = fields(raw)
    if f[5] == 'r' or f[5] == 'h' then
      if state == 's' then
        local used = split(ARGV[a + 3])
        f[3] = fmt(used[1] + used[2] + used[3] + used[4] + used[5])
        if f[4] == '' then
          f[2] = '0'
        else
          local p = split(f[4])
          f[2] = fmt(p[6] + used[1] * p[1] + used[2] * p[2] + used[3] * p[3] + used[4] * p[4] + used[5] * p[5])
        end
      elseif state == 'x' then
        f[2], f[3] = '0', '0'
      end
      f[5] = state
      redis.call('HSET', KEYS[2], id, table.concat(f, '|'))
    end
  end
end
return 0
`;
