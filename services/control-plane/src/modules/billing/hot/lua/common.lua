-- Helpers of the hot tier's scripts, after the generated writers of the `|` texts (record and
-- inFlight, hot-layout.ts). The scripts name the fields of those texts (RECORD, CALL, KEY_ENTRY and
-- ACCOUNT_ENTRY, dot, field) and their KEYS and ARGV; hot-layout.ts (compileLayout) turns each
-- name into its number before Redis sees the script.
--
-- Amounts are Lua numbers (doubles): exact below 2^53. What a lease holds, all sources together,
-- is kept at most 2^43 (R21), so every amount moved and every sum formed is exact, also times the
-- overrun cover's per cent (at most 1,000 < 2^10). Usage, estimates and costs above that only ever
-- meet min() against such amounts; write-offs, which are not bounded, are computed by the control
-- plane from the exact figures the records carry. Each sum and its maximum:
-- docs/decisions/hot-tier-integers.md.
local function num(value) return tonumber(value) or 0 end
-- R21: a source's `n:` (net leased over the lease's life) is kept modulo 2^52, as Postgres sends
-- it: it grows with all that is ever spent through the lease, and only its change between two
-- versions (at most the bound, 2^43, either way) is used.
local NET_MOD = 4503599627370496
local function netChange(new, old)
  local change = (new - old) % NET_MOD
  if change > NET_MOD / 2 then change = change - NET_MOD end
  return change
end
-- R16: the hot tier's one clock: Redis TIME, in ms and in µs, moved by `offsetMs` (the control
-- plane's clock's distance from real time: 0 but in tests, which move it).
local function clockNow(offsetMs)
  local time = redis.call('TIME')
  local micros = tonumber(time[1]) * 1000000 + tonumber(time[2]) + tonumber(offsetMs) * 1000
  return math.floor(micros / 1000), string.format('%.0f', micros)
end
local function fmt(value) return string.format('%.0f', value) end
local function split(text, separator)
  local parts = {}
  for part in string.gmatch(text, '([^' .. separator .. ']+)') do parts[#parts + 1] = part end
  return parts
end
-- Fields of a '|' text, empty ones kept.
local function fields(text)
  local parts = {}
  for part in string.gmatch(text .. '|', '([^|]*)|') do parts[#parts + 1] = part end
  return parts
end
local function loadHash(key)
  local flat = redis.call('HGETALL', key)
  local hash = {}
  for i = 1, #flat, 2 do hash[flat[i]] = flat[i + 1] end
  return hash
end
local function writeHash(key, changed)
  local flat = {}
  for field, value in pairs(changed) do
    flat[#flat + 1] = field
    flat[#flat + 1] = value
  end
  if #flat > 0 then redis.call('HSET', key, unpack(flat)) end
end
-- R3, R16: an entitlement is usable while unexpired by Redis TIME (now, ms) and covering the alias.
local function usable(st, s, alias, now)
  local expiry = num(st['x:' .. s])
  if expiry > 0 and expiry <= now then return false end
  local aliases = st['a:' .. s] or ''
  return aliases == '' or string.find(aliases, ',' .. alias .. ',', 1, true) ~= nil
end
-- R2b: units of source s one token costs: the alias's package rate when s is weighted, else 1.
local function unitRate(st, s, rate)
  return st['w:' .. s] == '1' and rate or 1
end
-- R2a: an input-side price list, ','-separated: input, 5-minute cache write, 1-hour cache write,
-- cache read, per call (hot-aliases.ts). One written before prices per part has input alone: every
-- input part at it, nothing per call.
local function priceList(text)
  local p = split(text, ',')
  local input = num(p[1])
  return { input, num(p[2] or p[1]), num(p[3] or p[1]), num(p[4] or p[1]), num(p[5] or '0') }
end
-- R2a: usage parts in the order package tokens cover them: input, 5-minute write, 1-hour write,
-- cache read (the ','-separated input parts, `usageIn`), then output.
local function usageParts(usageIn, usageOut)
  local p = split(usageIn, ',')
  return { num(p[1]), num(p[2]), num(p[3]), num(p[4]), num(usageOut) }
end
local function partsTotal(parts)
  return parts[1] + parts[2] + parts[3] + parts[4] + parts[5]
end
-- R9: takes up to `amount` tokens from the parts in order; returns tokens taken from input parts
-- and from output.
local function takeParts(parts, amount)
  local left, fromIn = amount, 0
  for i = 1, 5 do
    local take = math.min(parts[i], left)
    parts[i] = parts[i] - take
    left = left - take
    if i < 5 then fromIn = fromIn + take end
  end
  return fromIn, amount - left - fromIn
end
-- R9, R10: the parts at a price list and output price; the call's price when any token is left.
local function partsCost(parts, list, outPrice)
  if partsTotal(parts) <= 0 then return 0 end
  return parts[1] * list[1] + parts[2] * list[2] + parts[3] * list[3] + parts[4] * list[4]
    + parts[5] * num(outPrice) + list[5]
end
-- Legs: 'e:<id>:<amount>' per entitlement ('e:<id>:<amount>:<rate>' when weighted, R2b),
-- 'c:c:<amount>:<input price list>:<output price>' for credit.
local function parseLegs(text)
  local legs = {}
  for _, part in ipairs(split(text, ';')) do
    local f = split(part, ':')
    if f[1] == 'c' then
      legs[#legs + 1] = { source = f[2], amount = tonumber(f[3]), ip = f[4], op = f[5] }
    else
      legs[#legs + 1] = { source = f[2], amount = tonumber(f[3]), rate = tonumber(f[4] or '1') }
    end
  end
  return legs
end
-- Frees the concurrency slot a call in flight holds (`call`: its fields, by CALL index). The
-- lease sets share the account's hash tag with the calls hash, so this stays on one node.
local function freeSlots(id, call)
  for _, set in ipairs(split(call[CALL.slots] or '', ',')) do redis.call('ZREM', set, id) end
end
-- The record of a call finishing, from its call in flight (`call`: its fields, by CALL index).
local function finishedRecord(id, action, status, outcome, httpStatus, lease, call, at)
  return { id = id, action = action, status = status, outcome = outcome, httpStatus = httpStatus, lease = lease,
    keyId = call[CALL.keyId], alias = call[CALL.alias], surface = call[CALL.surface], created = call[CALL.created],
    estIn = call[CALL.estIn], estOut = call[CALL.estOut], reservedTokens = call[CALL.reservedTokens],
    reservedCredits = call[CALL.reservedCredits], legs = call[CALL.legs] or '', usageIn = '', usageOut = '', at = at,
    charges = '', legTakeIn = '0', legTakeOut = '0', creditTake = '0', creditIn = '', creditOut = '',
    overTakeIn = '0', overTakeOut = '0', overCredit = '0', overIn = '', overOut = '', forgotten = '0' }
end
