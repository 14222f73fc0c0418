/**
 * Spend caps in the hot tier (docs/billing/spend-caps.md): what each call of a capped account
 * counts, kept beside its lease under the same hash tag, and judged in one script per batch so
 * that concurrent calls are counted one after another, as the account's lock orders them in
 * Postgres. The control plane computes every window (timezones are not Lua's); Redis only counts.
 *
 *   capt (zset)   reservation id -> the instant it was counted (ms, the control plane's clock)
 *   capc (hash)   reservation id -> key id|credits|tokens|prices|state|windows, prices as
 *                 `input,output,cache read,cache write,1h cache write,per call` ('' = unpriced)
 *                 (state r: in flight, s: settled, x: released, h: held), windows as the starts
 *                 of the day, week and month it counts in (`day,week,month`, ms)
 *   capn (hash)   `period|window start|subject|c or t` -> the window's running sum of credits (c)
 *                 or tokens (t) of one subject (a key id, '' = the whole account); HINCRBY only.
 *                 `5h|subject|c or t`: the rolling window's running sums, of the calls counted at
 *                 or after `5h|through` (ms); a call leaves them when the window passes its instant
 *   capw (hash)   `period|window start` -> window end (ms): the windows capn has sums for
 *
 * A call's record is kept while the rolling window may count it or until it finishes; the sums
 * until 32 days after their window ended (capn and capw expire with the latest window). Judging a
 * call reads sums only: the calls of the rolling window are read when it moves past them (each
 * once), and when a rolling cap refuses (to tell when enough of it frees).
 * One call's amounts are Lua numbers (exact below 2^53); the sums are Redis's 64-bit integers.
 */
const CAP_COMMON = `
local function fields(text)
  local parts = {}
  for part in string.gmatch(text .. '|', '([^|]*)|') do parts[#parts + 1] = part end
  return parts
end
local function fmt(value) return string.format('%.0f', value) end
local function negate(text)
  if text == '0' or text == '' then return '0' end
  if string.sub(text, 1, 1) == '-' then return string.sub(text, 2) end
  return '-' .. text
end
local PERIODS = {'day', 'week', 'month'}
local ROLLING_THROUGH = '5h|through'
-- Adds to the rolling window's sums (KEYS[3]) of the account and of the call's key.
local function addToRolling(keyId, credits, tokens)
  for _, subject in ipairs({'', keyId}) do
    if credits ~= '0' then redis.call('HINCRBY', KEYS[3], '5h|' .. subject .. '|c', credits) end
    if tokens ~= '0' then redis.call('HINCRBY', KEYS[3], '5h|' .. subject .. '|t', tokens) end
  end
end
-- Where the rolling window's sums start (ms; nil: no sums yet), read once per script.
local rollingThrough = tonumber(redis.call('HGET', KEYS[3], ROLLING_THROUGH) or '')
-- Whether a counted call is still in the rolling window's sums (asked before it is removed).
local function inRolling(id)
  local at = redis.call('ZSCORE', KEYS[1], id)
  return at and rollingThrough and tonumber(at) >= rollingThrough
end
-- Adds to the calendar sums (KEYS[3]) a call counts in; f: its record's fields.
local function addToSums(f, credits, tokens)
  if f[6] == nil or f[6] == '' then return end
  local j = 0
  for start in string.gmatch(f[6], '([^,]+)') do
    j = j + 1
    for _, subject in ipairs({'', f[1]}) do
      local base = PERIODS[j] .. '|' .. start .. '|' .. subject .. '|'
      if credits ~= '0' then redis.call('HINCRBY', KEYS[3], base .. 'c', credits) end
      if tokens ~= '0' then redis.call('HINCRBY', KEYS[3], base .. 't', tokens) end
    end
  end
end
`;

/**
 * Judges a batch of one account's calls against its caps and counts each one that fits.
 * KEYS: capt, capc, capn, capw. ARGV: now ms, the rolling window's start ms (older calls leave
 * its sums, older finished calls are dropped), sums-since ms (sums of windows ending before are
 * not read), prune-before ms (windows ending before are dropped), expire-at ms, the current day,
 * week and month (start, end each), n, then per call: id, key id, credits, tokens, prices, m caps,
 * then per cap (6): key id ('' = the account), unit (credits|tokens), period, start ms, end ms
 * ('' = rolling: its start is the rolling window's), limit.
 * Returns per call {'ok'} | {'no', cap index (1-based), used, free at ms ('' = never)}.
 */
export const CAP_RESERVE_LUA = `${CAP_COMMON}
local now, since, sumsSince = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local pruneBefore, expireAt, count = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[12])
local ROLLING = 5 * 3600000
local current = {}
for j, period in ipairs(PERIODS) do
  current[j] = { period = period, start = ARGV[4 + 2 * j], stop = ARGV[5 + 2 * j] }
end
-- The calls counted at or after from (and before to, when given), oldest first; released ones
-- count nothing and are left out. Amounts stay text (HINCRBY takes them as they are).
local function callsBetween(from, to)
  local listed = redis.call('ZRANGEBYSCORE', KEYS[1], from, to and ('(' .. to) or '+inf', 'WITHSCORES')
  local calls = {}
  -- Read in chunks: one HMGET per 500 calls rather than one HGET each.
  for first = 1, #listed, 1000 do
    local ids = {}
    for i = first, math.min(first + 998, #listed - 1), 2 do ids[#ids + 1] = listed[i] end
    local raws = redis.call('HMGET', KEYS[2], unpack(ids))
    for j, raw in ipairs(raws) do
      if raw then
        local f = fields(raw)
        if f[5] ~= 'x' then
          calls[#calls + 1] = { key = f[1], credits = f[2], tokens = f[3],
                                at = tonumber(listed[first + (j - 1) * 2 + 1]) }
        end
      end
    end
  end
  return calls
end
-- The rolling window moved: the calls it passed leave its sums (each once). Without a mark (first
-- use, or the sums expired) they are summed afresh from the calls it reaches.
local through = rollingThrough
if through == nil then
  for _, call in ipairs(callsBetween(since)) do addToRolling(call.key, call.credits, call.tokens) end
  redis.call('HSET', KEYS[3], ROLLING_THROUGH, since)
  rollingThrough = since
elseif through < since then
  for _, call in ipairs(callsBetween(through, since)) do
    addToRolling(call.key, negate(call.credits), negate(call.tokens))
  end
  redis.call('HSET', KEYS[3], ROLLING_THROUGH, since)
  rollingThrough = since
end
-- Finished calls the rolling window no longer reaches.
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. since)
for _, id in ipairs(old) do
  local raw = redis.call('HGET', KEYS[2], id)
  local state = raw and fields(raw)[5]
  if state ~= 'r' and state ~= 'h' then
    redis.call('HDEL', KEYS[2], id)
    redis.call('ZREM', KEYS[1], id)
  end
end
-- The calendar windows with sums: those that may overlap a current window are read.
local windows = {}
local gone = {}
local listedWindows = redis.call('HGETALL', KEYS[4])
for i = 1, #listedWindows, 2 do
  local period, start = string.match(listedWindows[i], '([^|]*)|(.*)')
  local stop = tonumber(listedWindows[i + 1])
  if stop < pruneBefore then
    redis.call('HDEL', KEYS[4], listedWindows[i])
    gone[listedWindows[i]] = true
  elseif stop > sumsSince then
    windows[#windows + 1] = { period = period, start = tonumber(start), text = start, stop = stop }
  end
end
if next(gone) then
  for _, field in ipairs(redis.call('HKEYS', KEYS[3])) do
    if gone[string.match(field, '^([^|]*|[^|]*)|')] then redis.call('HDEL', KEYS[3], field) end
  end
end
for _, w in ipairs(current) do
  if redis.call('HSETNX', KEYS[4], w.period .. '|' .. w.start, w.stop) == 1 then
    windows[#windows + 1] = { period = w.period, start = tonumber(w.start), text = w.start, stop = tonumber(w.stop) }
  end
end
local starts = current[1].start .. ',' .. current[2].start .. ',' .. current[3].start
-- The rolling window's calls, read only when a rolling cap refuses (to tell when it frees).
local calls = nil

local function usedBy(cap)
  local used = 0
  local unit = cap.unit == 'credits' and 'c' or 't'
  if cap.stop == nil then return tonumber(redis.call('HGET', KEYS[3], '5h|' .. cap.key .. '|' .. unit) or '0') end
  for _, w in ipairs(windows) do
    if w.period == cap.period and w.start < cap.stop and w.stop > cap.start then
      used = used + tonumber(redis.call('HGET', KEYS[3], w.period .. '|' .. w.text .. '|' .. cap.key .. '|' .. unit) or '0')
    end
  end
  return used
end

-- When enough frees for amount: a calendar window at its end, the rolling one call by call.
local function freeAt(cap, used, amount)
  if cap.stop ~= nil then return cap.stop end
  if amount > cap.limit then return nil end
  calls = calls or callsBetween(since)
  local left = used
  for _, call in ipairs(calls) do
    if cap.key == '' or cap.key == call.key then
      left = left - tonumber(cap.unit == 'credits' and call.credits or call.tokens)
      if left + amount <= cap.limit then return call.at + ROLLING end
    end
  end
  return nil
end

local results = {}
local counted = false
local a = 12
for i = 1, count do
  local id, keyId, credits, tokens = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local prices, m = ARGV[a + 5], tonumber(ARGV[a + 6])
  a = a + 6
  local worst = nil
  if redis.call('HEXISTS', KEYS[2], id) == 1 then m = -m end
  for j = 1, math.abs(m) do
    local cap = { key = ARGV[a + 1], unit = ARGV[a + 2], period = ARGV[a + 3], start = tonumber(ARGV[a + 4]),
                  stop = tonumber(ARGV[a + 5]), limit = tonumber(ARGV[a + 6]) }
    a = a + 6
    if m > 0 then
      local amount = tonumber(cap.unit == 'credits' and credits or tokens)
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
      local f = {keyId, credits, tokens, prices, 'r', starts}
      redis.call('ZADD', KEYS[1], now, id)
      redis.call('HSET', KEYS[2], id, table.concat(f, '|'))
      addToSums(f, credits, tokens)
      addToRolling(keyId, credits, tokens)
      counted = true
      if calls then calls[#calls + 1] = { key = keyId, credits = credits, tokens = tokens, at = now } end
    end
    results[i] = {'ok'}
  end
end
if counted then
  redis.call('PEXPIREAT', KEYS[3], expireAt)
  redis.call('PEXPIREAT', KEYS[4], expireAt)
end
return results
`;

/**
 * Uncounts calls the reservation then refused (the balance, a limit, the key): they count nothing.
 * KEYS: capt, capc, capn. ARGV: ids.
 */
export const CAP_UNCOUNT_LUA = `${CAP_COMMON}
for i = 1, #ARGV do
  local raw = redis.call('HGET', KEYS[2], ARGV[i])
  if raw then
    local f = fields(raw)
    if f[5] == 'r' or f[5] == 'h' then
      addToSums(f, negate(f[2]), negate(f[3]))
      if inRolling(ARGV[i]) then addToRolling(f[1], negate(f[2]), negate(f[3])) end
    end
  end
  redis.call('HDEL', KEYS[2], ARGV[i])
  redis.call('ZREM', KEYS[1], ARGV[i])
end
return 0
`;

/**
 * The settlement corrects what a call counts: every part it used (each at the price counted with
 * it, plus the price per call) once settled, nothing once released; a held call keeps its
 * estimate. The calendar sums it counts in change by the difference.
 * KEYS: capt, capc, capn. ARGV: n, then per call: id, state (s|x|h), parts
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
      local credits, tokens = f[2], f[3]
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
      local moreCredits, moreTokens = fmt(tonumber(f[2]) - tonumber(credits)), fmt(tonumber(f[3]) - tonumber(tokens))
      addToSums(f, moreCredits, moreTokens)
      if inRolling(id) then addToRolling(f[1], moreCredits, moreTokens) end
    end
  end
end
return 0
`;
