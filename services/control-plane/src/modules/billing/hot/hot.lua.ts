import { LIMITS_LUA } from '@tollgate/service-kit';

/**
 * The hot tier's Redis scripts. Each one touches one account's keys only (one hash tag), so on a
 * Redis Cluster it runs on one node as one atomic step. Every `redis.call` costs a script a few
 * µs, so a call does as few as it can: one hash for the lease, one for the calls, a string per key.
 *
 * The account's lease (hash `lease`):
 *   lease, ver        the Postgres lease it mirrors and the newest version of it applied
 *   more, tried       1 when Postgres may hold more for it (a grant, a returned hold); when the
 *                     last top-up ran (ms)
 *   last              last reservation or finish (ms)
 *   order             its sources in draw order: entitlement ids, then `c` (credit)
 *   n:<s>             what the lease holds of source s, net of returns (as Postgres has it)
 *   r:<s>, h:<s>      of that, what is free, and what calls in flight hold
 *   x:<s>, a:<s>      an entitlement's expiry (ms, 0 = none) and covered aliases (`,a,b,`; '' = all)
 * The account's calls (hash `calls`), by reservation id:
 *   R|key|alias|surface|created µs|estimate in|estimate out|tokens|credits|legs   in flight
 *   D|<record>        finished, not yet in Postgres (RECORD_FIELDS, hot-records.ts)
 *   G|<until ms>      tombstone: finished before its reserve arrived, so the reserve takes nothing
 * Key and account entries are strings with the version Postgres gave the row (hot-entries.ts):
 *   key `version|state|lookup hash|expiry ms|,scope,`, account `version|state`, a change under way
 *   `version|changing|until ms`.
 *
 * Amounts are Lua numbers (doubles): exact below 2^53, and every source a lease holds is kept
 * below 2^50, so every amount moved is exact. Usage and estimates above that only ever meet
 * min() against such amounts; write-offs, which are not bounded, are computed by the control
 * plane from the exact figures the records carry.
 */
const COMMON = `
local function num(value) return tonumber(value) or 0 end
local function fmt(value) return string.format('%.0f', value) end
local function split(text, separator)
  local parts = {}
  for part in string.gmatch(text, '([^' .. separator .. ']+)') do parts[#parts + 1] = part end
  return parts
end
-- Fields of a '|' record, empty ones kept.
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
local function usable(st, s, alias, now)
  local expiry = num(st['x:' .. s])
  if expiry > 0 and expiry <= now then return false end
  local aliases = st['a:' .. s] or ''
  return aliases == '' or string.find(aliases, ',' .. alias .. ',', 1, true) ~= nil
end
-- Legs: 'e:<id>:<amount>' per entitlement, 'c:c:<amount>:<input price>:<output price>' for credit.
local function parseLegs(text)
  local legs = {}
  for _, part in ipairs(split(text, ';')) do
    local f = split(part, ':')
    legs[#legs + 1] = { source = f[2], amount = tonumber(f[3]), ip = f[4], op = f[5] }
  end
  return legs
end
-- A finished call (hot-records.ts, RECORD_FIELDS: the same order).
local function record(r)
  return table.concat({r.id, r.action, r.status, r.outcome, r.httpStatus, r.lease, r.keyId, r.alias, r.surface,
    r.created, r.estIn, r.estOut, r.reservedTokens, r.reservedCredits, r.legs, r.usageIn, r.usageOut, r.at,
    r.charges, r.legTakeIn, r.legTakeOut, r.creditTake, r.creditIn, r.creditOut, r.overTakeIn, r.overTakeOut,
    r.overCredit, r.overIn, r.overOut, r.forgotten}, '|')
end
local function finishedRecord(id, action, status, outcome, httpStatus, lease, call, at)
  return { id = id, action = action, status = status, outcome = outcome, httpStatus = httpStatus, lease = lease,
    keyId = call[1], alias = call[2], surface = call[3], created = call[4], estIn = call[5], estOut = call[6],
    reservedTokens = call[7], reservedCredits = call[8], legs = call[9] or '', usageIn = '', usageOut = '', at = at,
    charges = '', legTakeIn = '0', legTakeOut = '0', creditTake = '0', creditIn = '', creditOut = '',
    overTakeIn = '0', overTakeOut = '0', overCredit = '0', overIn = '', overOut = '', forgotten = '0' }
end
`;

/**
 * Reserves a batch of one account's calls: checks the key (entry), the account, the alias, the
 * limits, then draws from the lease, all or nothing per call.
 *
 * KEYS: lease, calls, account entry, then per call: key entry, key rate, package rate, key leases,
 * package leases.
 * ARGV: topup allowed (1/0), cover percent, lease ttl ms, top-up interval ms, n, then per call
 * (15): id, key id, lookup hash, alias, alias state (ok, unknown, unpublished, protocol),
 * surface, estimate in, estimate out, input price, output price ('' = unpriced), key rpm ('' =
 * limits checked by the gateway), key concurrency, package rpm, package concurrency, window ms.
 * Returns per call: {'ok', legs, tokens, credits, budget} | {'no', code, retry ms, budget} | {'miss'} (a key or
 * account entry to load) | {'cold'} (no lease) | {'topup', lease id} (short; Postgres may hold more).
 */
export const RESERVE_LUA = `${LIMITS_LUA}${COMMON}
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local createdUs = time[1] .. string.format('%06d', tonumber(time[2]))
local st = loadHash(KEYS[1])
local hot = st['lease'] ~= nil
local changed = {}
local function set(field, value) st[field] = value; changed[field] = value end
local sources = hot and split(st['order'] or '', ',') or {}
local accountRaw = redis.call('GET', KEYS[3])
local account = accountRaw and fields(accountRaw) or nil
local topupAllowed = ARGV[1] == '1'
local cover = tonumber(ARGV[2])
local leaseTtl = tonumber(ARGV[3])
local topupEvery = tonumber(ARGV[4])
local count = tonumber(ARGV[5])
local reserved = 0

-- limit:remaining:ms to reset, as rateTake left it.
local function budgetText(l)
  return fmt(l.budget[1]) .. ':' .. fmt(l.budget[2]) .. ':' .. fmt(l.budget[3])
end

local function anyCovering(alias)
  for _, s in ipairs(sources) do
    if s ~= 'c' and usable(st, s, alias, now) then return true end
  end
  return false
end

local function reserveOne(a, k)
  local id, keyId, lookupHash, alias, aliasState = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
  local surface, estIn, estOut = ARGV[a + 6], tonumber(ARGV[a + 7]), tonumber(ARGV[a + 8])
  local inPrice, outPrice = ARGV[a + 9], ARGV[a + 10]
  local existing = redis.call('HGET', KEYS[2], id)
  if existing then
    -- A repeat: what it holds; or it finished before this reserve arrived: nothing.
    if string.sub(existing, 1, 1) ~= 'R' then return {'ok', '', '0', '0'} end
    local f = fields(existing)
    return {'ok', f[10], f[8], f[9]}
  end
  local keyRaw = redis.call('GET', KEYS[k + 1])
  if not keyRaw or not account or account[2] == 'changing' then return {'miss'} end
  local key = fields(keyRaw)
  local state = key[2]
  if state == 'changing' then return {'miss'} end
  if key[3] ~= lookupHash then return {'no', 'invalid_api_key', '0'} end
  if state == 'revoked' then return {'no', 'api_key_revoked', '0'} end
  if state == 'disabled' then return {'no', 'api_key_disabled', '0'} end
  if num(key[4]) > 0 and num(key[4]) <= now then return {'no', 'api_key_expired', '0'} end
  if account[2] == 'suspended' then return {'no', 'account_suspended', '0'} end
  if aliasState == 'unknown' then return {'no', 'invalid_model', '0'} end
  if aliasState == 'unpublished' or (key[5] ~= '' and string.find(key[5], ',' .. alias .. ',', 1, true) == nil) then
    return {'no', 'model_not_allowed', '0'}
  end
  if aliasState == 'protocol' then return {'no', 'model_unavailable', '0'} end
  if not hot then return {'cold'} end
  -- Balances changed in Postgres since (a grant, a refund, a returned hold): the lease takes them
  -- in first, so this call already draws in the right order from the right sources.
  if topupAllowed and st['more'] == '1' then return {'topup', st['lease']} end

  local limits = nil
  if ARGV[a + 11] ~= '' then
    limits = {
      keyRate = KEYS[k + 2], planRate = KEYS[k + 3], keyLeases = KEYS[k + 4], planLeases = KEYS[k + 5],
      keyRpm = tonumber(ARGV[a + 11]), keySlots = tonumber(ARGV[a + 12]),
      planRpm = num(ARGV[a + 13]), planSlots = num(ARGV[a + 14]), window = tonumber(ARGV[a + 15]),
    }
    local rate = rateTake(limits, now)
    if rate then return {'no', 'rate_limit_exceeded', fmt(rate[2]), budgetText(limits)} end
    if slotsFree(limits, now) then
      rateGive(limits, now)
      return {'no', 'concurrency_limit_exceeded', '0'}
    end
  end

  -- The draw (as tollgate_reserve_one): entitlements covering the alias, soonest expiry first,
  -- then credit at the alias's price; the whole estimate or nothing.
  local need = estIn + estOut
  local takes = {}
  local tokens = 0
  for _, s in ipairs(sources) do
    if tokens >= need then break end
    if s ~= 'c' then
      local free = num(st['r:' .. s])
      if free > 0 and usable(st, s, alias, now) then
        local take = math.min(need - tokens, free)
        takes[#takes + 1] = { s, take }
        tokens = tokens + take
      end
    end
  end
  local credit = 0
  local short = nil
  local priced = inPrice ~= '' and outPrice ~= ''
  if tokens < need then
    local covered = false
    if priced then
      local coveredIn = math.min(tokens, estIn)
      local cost = (estIn - coveredIn) * tonumber(inPrice) + (estOut - (tokens - coveredIn)) * tonumber(outPrice)
      if cost <= num(st['r:c']) then
        credit = cost
        covered = true
      end
    end
    if not covered then
      short = ((not priced) or anyCovering(alias)) and 'insufficient_tokens' or 'insufficient_credits'
    end
  end
  -- The overrun cover (RESERVE_OVERRUN_COVER_PERCENT), per pool, as in Postgres.
  if not short and cover > 0 and tokens > 0 then
    local poolHeld, poolFree = 0, 0
    -- Held by calls in flight on any entitlement, also one expired since (its calls may overrun).
    for field, value in pairs(st) do
      if string.sub(field, 1, 2) == 'h:' and field ~= 'h:c' then poolHeld = poolHeld + num(value) end
    end
    for _, s in ipairs(sources) do
      if s ~= 'c' and num(st['r:' .. s]) > 0 and usable(st, s, alias, now) then
        poolFree = poolFree + num(st['r:' .. s])
      end
    end
    if poolHeld > 0 and (poolFree - tokens) * 100 < cover * (poolHeld + tokens) then short = 'insufficient_tokens' end
  end
  if not short and cover > 0 and credit > 0 then
    local held, free = num(st['h:c']), num(st['r:c'])
    if held > 0 and (free - credit) * 100 < cover * (held + credit) then short = 'insufficient_credits' end
  end
  if short then
    if topupAllowed and (st['more'] == '1' or now - num(st['tried']) >= topupEvery) then
      -- Asked again after the top-up: counted then.
      if limits then rateGive(limits, now) end
      return {'topup', st['lease']}
    end
    -- Refused for its balance, it still counts against the rate ceilings, as every call does.
    return {'no', short, '0'}
  end

  local legs = {}
  for _, take in ipairs(takes) do
    local s = take[1]
    set('r:' .. s, fmt(num(st['r:' .. s]) - take[2]))
    set('h:' .. s, fmt(num(st['h:' .. s]) + take[2]))
    legs[#legs + 1] = 'e:' .. s .. ':' .. fmt(take[2])
  end
  if credit > 0 then
    set('r:c', fmt(num(st['r:c']) - credit))
    set('h:c', fmt(num(st['h:c']) + credit))
    legs[#legs + 1] = 'c:c:' .. fmt(credit) .. ':' .. inPrice .. ':' .. outPrice
  end
  local legText = table.concat(legs, ';')
  if limits then slotTake(limits, now, id, leaseTtl) end
  redis.call('HSET', KEYS[2], id, table.concat({'R', keyId, alias, surface, createdUs, fmt(estIn), fmt(estOut),
    fmt(tokens), fmt(credit), legText}, '|'))
  reserved = reserved + 1
  return {'ok', legText, fmt(tokens), fmt(credit), limits and budgetText(limits) or ''}
end

local results = {}
for i = 1, count do
  results[i] = reserveOne(5 + (i - 1) * 15, 3 + (i - 1) * 5)
end
if reserved > 0 then set('last', fmt(now)) end
writeHash(KEYS[1], changed)
return results
`;

/**
 * Finishes a batch of one account's calls: settle, release or hold, as tollgate_settle_legs and
 * tollgate_charge_available do in Postgres. The finished call is kept (D) until Postgres has it (a
 * repeat answers from there). A call Redis does not know is answered `unknown` (the control plane
 * looks in Postgres first), or, with `forgotten` set, charged from the lease as a reservation lost
 * with Redis; a release or hold of one leaves a tombstone once written, so its reserve, if it
 * arrives later, reserves nothing.
 *
 * A settle may draw beyond its reservation from whatever the account has (docs/billing/rules.md
 * R10), so while Postgres may hold more than the lease (a grant since), nothing is finished: every
 * call answers {'topup', lease id}, and the control plane tops the lease up and asks again.
 *
 * KEYS: lease, calls. ARGV: forgotten (1/0), top-up allowed (1/0), n, then per call (12): id,
 * action, usage in, usage out, outcome, http status, key id, alias, surface, input price, output
 * price (the alias's current prices; '' = unpriced), created (µs; for a forgotten call).
 * Returns per call: {'done', record} | {'unknown'} | {'cold'} | {'topup', lease id}.
 */
export const FINISH_LUA = `${COMMON}
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local st = loadHash(KEYS[1])
local hot = st['lease'] ~= nil
local changed = {}
local function set(field, value) st[field] = value; changed[field] = value end
local function add(field, delta) set(field, fmt(num(st[field]) + delta)) end
local sources = hot and split(st['order'] or '', ',') or {}
local forgotten = ARGV[1] == '1'
local count = tonumber(ARGV[3])
local finished = 0
if hot and ARGV[2] == '1' and st['more'] == '1' then
  for i = 1, count do
    if ARGV[3 + (i - 1) * 12 + 2] == 'settle' then
      local results = {}
      for j = 1, count do results[j] = {'topup', st['lease']} end
      return results
    end
  end
end

local function finishOne(a)
  local id, action = ARGV[a + 1], ARGV[a + 2]
  local existing = redis.call('HGET', KEYS[2], id)
  local kind = existing and string.sub(existing, 1, 1) or nil
  if kind == 'D' then return {'done', string.sub(existing, 3)} end
  if kind ~= 'R' and not forgotten then return {'unknown'} end
  if not hot then return {'cold'} end
  local call
  local legs = {}
  if kind == 'R' then
    call = fields(string.sub(existing, 3))
    legs = parseLegs(call[9] or '')
  else
    call = {ARGV[a + 7], ARGV[a + 8], ARGV[a + 9], ARGV[a + 12], '0', '0', '0', '0', ''}
  end
  local status = action == 'release' and 'released' or (action == 'hold' and 'held' or 'settled')
  local r = finishedRecord(id, action, status, ARGV[a + 5], ARGV[a + 6], st['lease'], call, fmt(now))
  if kind ~= 'R' then r.forgotten = '1' end

  if action == 'release' then
    for _, leg in ipairs(legs) do
      add('r:' .. leg.source, leg.amount)
      add('h:' .. leg.source, -leg.amount)
    end
  elseif action == 'hold' then
    -- What it holds leaves the lease for the held row; an admin or the hold timeout settles it.
    for _, leg in ipairs(legs) do add('h:' .. leg.source, -leg.amount) end
  else
    r.usageIn, r.usageOut = ARGV[a + 3], ARGV[a + 4]
    local remIn, remOut = tonumber(r.usageIn), tonumber(r.usageOut)
    local charges = {}
    local order = {}
    local function charge(s, amount)
      if amount <= 0 then return end
      if not charges[s] then
        charges[s] = 0
        order[#order + 1] = s
      end
      charges[s] = charges[s] + amount
    end
    local legIn, legOut, extra = 0, 0, 0
    for _, leg in ipairs(legs) do
      add('h:' .. leg.source, -leg.amount)
      if leg.source ~= 'c' then
        local take = math.min(leg.amount, remIn + remOut)
        local takeIn = math.min(take, remIn)
        remIn = remIn - takeIn
        remOut = remOut - (take - takeIn)
        legIn = legIn + takeIn
        legOut = legOut + (take - takeIn)
        add('r:' .. leg.source, leg.amount - take)
        charge(leg.source, take)
      else
        local cost = remIn * tonumber(leg.ip) + remOut * tonumber(leg.op)
        local take = math.min(cost, leg.amount)
        add('r:c', leg.amount - take)
        charge('c', take)
        extra = cost - take
        r.creditTake, r.creditIn, r.creditOut = fmt(take), leg.ip, leg.op
        remIn, remOut = 0, 0
      end
    end
    r.legTakeIn, r.legTakeOut = fmt(legIn), fmt(legOut)
    -- Usage beyond the reservation: from what the lease has free, then credit; the rest is
    -- written off (computed exactly by the control plane).
    local owed = extra
    if remIn + remOut > 0 then
      local overIn, overOut = 0, 0
      for _, s in ipairs(sources) do
        if remIn + remOut <= 0 then break end
        local free = num(st['r:' .. s])
        if s ~= 'c' and free > 0 and usable(st, s, r.alias, now) then
          local take = math.min(remIn + remOut, free)
          local takeIn = math.min(take, remIn)
          remIn = remIn - takeIn
          remOut = remOut - (take - takeIn)
          overIn = overIn + takeIn
          overOut = overOut + (take - takeIn)
          add('r:' .. s, -take)
          charge(s, take)
        end
      end
      r.overTakeIn, r.overTakeOut = fmt(overIn), fmt(overOut)
      local inPrice, outPrice = ARGV[a + 10], ARGV[a + 11]
      if remIn + remOut > 0 and inPrice ~= '' and outPrice ~= '' then
        owed = owed + remIn * tonumber(inPrice) + remOut * tonumber(outPrice)
        r.overIn, r.overOut = inPrice, outPrice
      end
    end
    if owed > 0 then
      local take = math.min(owed, math.max(0, num(st['r:c'])))
      if take > 0 then
        add('r:c', -take)
        charge('c', take)
        r.overCredit = fmt(take)
      end
    end
    local parts = {}
    for _, s in ipairs(order) do parts[#parts + 1] = s .. ':' .. fmt(charges[s]) end
    r.charges = table.concat(parts, ';')
  end
  local text = record(r)
  redis.call('HSET', KEYS[2], id, 'D|' .. text)
  finished = finished + 1
  return {'done', text}
end

local results = {}
for i = 1, count do
  results[i] = finishOne(3 + (i - 1) * 12)
end
if finished > 0 and hot then set('last', fmt(now)) end
if hot then writeHash(KEYS[1], changed) end
return results
`;

/**
 * Postgres has these finished calls: Redis forgets them, but for a release or hold of a call it
 * never saw, which stays as a tombstone until `until` (its reserve may still be on its way).
 * KEYS: calls. ARGV: until ms, then ids.
 */
export const WRITTEN_LUA = `
for i = 2, #ARGV do
  local value = redis.call('HGET', KEYS[1], ARGV[i])
  if value and string.sub(value, 1, 1) == 'D' then
    local forgotten = string.sub(value, -2) == '|1'
    local settle = string.find(value, '^D|[^|]*|settle|') ~= nil
    if forgotten and not settle then
      redis.call('HSET', KEYS[1], ARGV[i], 'G|' .. ARGV[1])
    else
      redis.call('HDEL', KEYS[1], ARGV[i])
    end
  end
end
return 0
`;

/**
 * A control plane about to open a lease claims the account first, so only one installs one.
 * KEYS: lease, claim. ARGV: token, ttl ms, mode ('claim': take it if free; 'verify': still ours,
 * extended). Returns 'present' (a lease is installed), 'busy' (another holds the claim),
 * 'claimed'/'ok', or 'lost'.
 */
export const CLAIM_LUA = `
if redis.call('HEXISTS', KEYS[1], 'lease') == 1 then return 'present' end
local holder = redis.call('GET', KEYS[2])
if ARGV[3] == 'claim' then
  if holder then return 'busy' end
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
  return 'claimed'
end
if holder ~= ARGV[1] then return 'lost' end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 'ok'
`;

/**
 * Writes a lease's state as Postgres has it. 'install': a new lease, only by the claim's holder
 * and only while none is installed. 'sync': the same lease with a newer (or the same) version:
 * each source's free part moves by the change of its net amount.
 * KEYS: lease, claim. ARGV: mode, token, lease id, version, more (1/0), now ms, n, then per source
 * (4): id ('c' = credit), net, expiry ms, aliases (',a,b,' or '').
 * Returns 'installed' | 'synced' | 'lost' | 'stale'.
 */
export const LEASE_LUA = `${COMMON}
local mode, leaseId, version = ARGV[1], ARGV[3], tonumber(ARGV[4])
local st = loadHash(KEYS[1])
if mode == 'install' then
  if st['lease'] ~= nil or redis.call('GET', KEYS[2]) ~= ARGV[2] then return 'lost' end
  redis.call('DEL', KEYS[2])
  st = {}
elseif st['lease'] ~= leaseId or num(st['ver']) > version then
  return 'stale'
end
local values = {'lease', leaseId, 'ver', fmt(version), 'more', ARGV[5], 'tried', ARGV[6]}
if mode == 'install' then
  values[#values + 1] = 'last'
  values[#values + 1] = ARGV[6]
end
local order = {}
local count = tonumber(ARGV[7])
for i = 1, count do
  local a = 7 + (i - 1) * 4
  local s, net = ARGV[a + 1], tonumber(ARGV[a + 2])
  order[#order + 1] = s
  local delta = net - num(st['n:' .. s])
  for _, pair in ipairs({ {'n:' .. s, fmt(net)}, {'r:' .. s, fmt(num(st['r:' .. s]) + delta)},
                          {'h:' .. s, fmt(num(st['h:' .. s]))}, {'x:' .. s, ARGV[a + 3]}, {'a:' .. s, ARGV[a + 4]} }) do
    values[#values + 1] = pair[1]
    values[#values + 1] = pair[2]
  end
end
values[#values + 1] = 'order'
values[#values + 1] = table.concat(order, ',')
redis.call('HSET', KEYS[1], unpack(values))
return mode == 'install' and 'installed' or 'synced'
`;

/**
 * Takes what is free in a lease out of Redis, to be returned in Postgres under `version`, and
 * marks that Postgres may hold more (the next call short of balance tops up). Calls in flight
 * keep what they hold. KEYS: lease, claim. ARGV: version.
 * Returns {'absent', claimed (1/0)} | {'taken', lease id, source, amount, ...}.
 */
export const RECALL_LUA = `${COMMON}
local st = loadHash(KEYS[1])
if st['lease'] == nil then return {'absent', redis.call('EXISTS', KEYS[2])} end
local result = {'taken', st['lease']}
local values = {'ver', ARGV[1], 'more', '1'}
-- Every source the lease holds free, also one it no longer draws from (an entitlement expired or
-- refunded since, to which a call gave back what it did not use).
for field, value in pairs(st) do
  local s = string.sub(field, 1, 2) == 'r:' and string.sub(field, 3) or nil
  local free = s and num(value) or 0
  if free > 0 then
    for _, pair in ipairs({ {'r:' .. s, '0'}, {'n:' .. s, fmt(num(st['n:' .. s]) - free)} }) do
      values[#values + 1] = pair[1]
      values[#values + 1] = pair[2]
    end
    result[#result + 1] = s
    result[#result + 1] = fmt(free)
  end
end
redis.call('HSET', KEYS[1], unpack(values))
return result
`;

/**
 * The reconciler's pass over one lease: calls in flight past the reservation timeout are held
 * (settlement_missing) and returned with finished calls Postgres has not had for a while (their
 * control plane stopped); expired tombstones go; a lease idle long enough, with nothing in flight
 * or unwritten, is removed from Redis, to be closed in Postgres.
 * KEYS: lease, calls, claim. ARGV: lease id, now ms, reservation timeout ms, unwritten after ms,
 * idle ms. Returns {'absent', claimed} | {'other'} | {'closed'} | {'open', record...}.
 */
export const SWEEP_LUA = `${COMMON}
local st = loadHash(KEYS[1])
if st['lease'] == nil then return {'absent', redis.call('EXISTS', KEYS[3])} end
if st['lease'] ~= ARGV[1] then return {'other'} end
local now, timeout, unwritten, idle = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local results = {'open'}
local live = 0
local calls = redis.call('HGETALL', KEYS[2])
for i = 1, #calls, 2 do
  local id, value = calls[i], calls[i + 1]
  local kind = string.sub(value, 1, 1)
  local text = string.sub(value, 3)
  if kind == 'G' then
    if num(text) < now then redis.call('HDEL', KEYS[2], id) end
  elseif kind == 'D' then
    live = live + 1
    -- Finished a while ago and still not in Postgres: its control plane stopped.
    if num(fields(text)[18]) + unwritten < now then results[#results + 1] = text end
  else
    live = live + 1
    local call = fields(text)
    if math.floor(tonumber(call[4]) / 1000) + timeout < now then
      local r = finishedRecord(id, 'hold', 'held', 'settlement_missing', '', st['lease'], call, fmt(now))
      for _, leg in ipairs(parseLegs(r.legs)) do
        redis.call('HSET', KEYS[1], 'h:' .. leg.source, fmt(num(redis.call('HGET', KEYS[1], 'h:' .. leg.source)) - leg.amount))
      end
      local finished = record(r)
      redis.call('HSET', KEYS[2], id, 'D|' .. finished)
      results[#results + 1] = finished
    end
  end
end
if live == 0 and num(st['last']) + idle <= now then
  redis.call('DEL', KEYS[1], KEYS[2])
  return {'closed'}
end
return results
`;

/** Postgres may hold more for this lease (a hold returned there): the next short call tops up. KEYS: lease. */
export const MORE_LUA = `
if redis.call('HEXISTS', KEYS[1], 'lease') == 1 then redis.call('HSET', KEYS[1], 'more', '1') end
return 0
`;

/**
 * Writes a key's or account's entry unless Redis has a newer one. An entry marked as changing
 * (a change under way in Postgres) is replaced only by its own version or a newer one, or by
 * anything once its mark has expired (the change was rolled back).
 * KEYS: entry. ARGV: entry, version, ttl ms, now ms. Returns 'written' | 'older'.
 */
export const ENTRY_LUA = `
local raw = redis.call('GET', KEYS[1])
if raw then
  local version, state, rest = string.match(raw, '^([^|]*)|([^|]*)|?(.*)$')
  local expired = state == 'changing' and tonumber(rest) < tonumber(ARGV[4])
  if tonumber(version) > tonumber(ARGV[2]) and not expired then return 'older' end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return 'written'
`;
