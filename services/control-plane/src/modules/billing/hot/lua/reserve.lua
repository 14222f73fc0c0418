-- Reserves a batch of one account's calls (R3 to R8): checks the key (entry), the account, the
-- alias, the limits, then draws from the lease, all or nothing per call. KEYS and ARGV: hot-layout.ts.
-- Returns per call: {'ok', legs, tokens, credits, budget, pinned} | {'no', code, retry ms, budget} |
-- {'miss'} (a key or account entry to load) | {'cold'} (no lease) | {'topup', lease id} (short;
-- Postgres may hold more) | {'postgres'} (short, and the account has more than the lease's bound:
-- made in Postgres).
-- R16: every expiry this script decides is by clockNow (Redis TIME).
local now, createdUs = clockNow(ARGV[ARG.clockOffsetMs])
local st = loadHash(KEYS[KEY.lease])
local hot = st['lease'] ~= nil
local changed = {}
local function set(field, value) st[field] = value; changed[field] = value end
local sources = hot and split(st['order'] or '', ',') or {}
local accountRaw = redis.call('GET', KEYS[KEY.account])
local account = accountRaw and fields(accountRaw) or nil
local topupAllowed = ARGV[ARG.topupAllowed] == '1'
local cover = tonumber(ARGV[ARG.coverPercent])
local leaseTtl = tonumber(ARGV[ARG.leaseTtlMs])
local topupEvery = tonumber(ARGV[ARG.topupEveryMs])
local count = tonumber(ARGV[ARG.count])
local reserved = 0
-- R21: '' when the lease holds all the account has; else the lease holds a prefix of the draw
-- order up to this source (an entitlement id or 'c'), the rest is in Postgres. Nothing is drawn
-- past it, so every call drawn here draws as the Postgres engine would.
local cut = st['cut'] or ''

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

-- The upstream the conversation's affinity record names, renewed ('' when none or not asked): read
-- here so that a routed call costs no Redis round trip of its own (docs/routing.md).
local function pinnedOf(a, k)
  local ttl = ARGV[a + ITEM_ARG.affinityTtlMs]
  if ttl == '' then return '' end
  -- pcall: a record of the wrong type costs the call its affinity, never the batch its answer.
  local value = redis.pcall('GETEX', KEYS[k + ITEM_KEY.affinity], 'PX', ttl)
  return type(value) == 'string' and value or ''
end

-- a, k: where the call's arguments and keys start (ARGV[a + ITEM_ARG.<name>], KEYS[k + ITEM_KEY.<name>]).
local function reserveOne(a, k)
  local id, keyId, lookupHash = ARGV[a + ITEM_ARG.id], ARGV[a + ITEM_ARG.keyId], ARGV[a + ITEM_ARG.lookupHash]
  local alias, aliasState, surface = ARGV[a + ITEM_ARG.alias], ARGV[a + ITEM_ARG.aliasState], ARGV[a + ITEM_ARG.surface]
  local estIn, estOut = tonumber(ARGV[a + ITEM_ARG.estimateIn]), tonumber(ARGV[a + ITEM_ARG.estimateOut])
  local inPrice, outPrice = ARGV[a + ITEM_ARG.inputPrice], ARGV[a + ITEM_ARG.outputPrice]
  local rate = math.max(1, num(ARGV[a + ITEM_ARG.packageRate]))
  local existing = redis.call('HGET', KEYS[KEY.calls], id)
  if existing then
    -- R8: a repeat answers what it holds; one finished before this reserve arrived, nothing.
    if string.sub(existing, 1, 1) ~= 'R' then return {'ok', '', '0', '0', '', pinnedOf(a, k)} end
    local f = fields(string.sub(existing, 3))
    return {'ok', f[CALL.legs], f[CALL.reservedTokens], f[CALL.reservedCredits], '', pinnedOf(a, k)}
  end
  local keyRaw = redis.call('GET', KEYS[k + ITEM_KEY.key])
  if not keyRaw or not account or account[ACCOUNT_ENTRY.state] == 'changing' then return {'miss'} end
  local key = fields(keyRaw)
  local state = key[KEY_ENTRY.state]
  if state == 'changing' then return {'miss'} end
  if key[KEY_ENTRY.lookupHash] ~= lookupHash then return {'no', 'invalid_api_key', '0'} end
  if state == 'revoked' then return {'no', 'api_key_revoked', '0'} end
  if state == 'disabled' then return {'no', 'api_key_disabled', '0'} end
  local keyExpiry = num(key[KEY_ENTRY.expiresAt])
  if keyExpiry > 0 and keyExpiry <= now then return {'no', 'api_key_expired', '0'} end
  if account[ACCOUNT_ENTRY.state] == 'suspended' then return {'no', 'account_suspended', '0'} end
  if aliasState == 'unknown' then return {'no', 'invalid_model', '0'} end
  local scope = key[KEY_ENTRY.scope]
  if aliasState == 'unpublished' or (scope ~= '' and string.find(scope, ',' .. alias .. ',', 1, true) == nil) then
    return {'no', 'model_not_allowed', '0'}
  end
  if aliasState == 'protocol' then return {'no', 'model_unavailable', '0'} end
  if not hot then return {'cold'} end
  -- Balances changed in Postgres since (a grant, a refund, a returned hold): the lease takes them
  -- in first, so this call already draws in the right order from the right sources.
  if topupAllowed and st['more'] == '1' then return {'topup', st['lease']} end

  local limits = nil
  if ARGV[a + ITEM_ARG.keyRpm] ~= '' then
    limits = {
      keyRate = KEYS[k + ITEM_KEY.keyRate], planRate = KEYS[k + ITEM_KEY.planRate],
      keyLeases = KEYS[k + ITEM_KEY.keyLeases], planLeases = KEYS[k + ITEM_KEY.planLeases],
      keyRpm = tonumber(ARGV[a + ITEM_ARG.keyRpm]), keySlots = tonumber(ARGV[a + ITEM_ARG.keyConcurrency]),
      planRpm = num(ARGV[a + ITEM_ARG.planRpm]), planSlots = num(ARGV[a + ITEM_ARG.planConcurrency]),
      window = tonumber(ARGV[a + ITEM_ARG.windowMs]),
    }
    local rate = rateTake(limits, now)
    if rate then return {'no', 'rate_limit_exceeded', fmt(rate[2]), budgetText(limits)} end
    if slotsFree(limits, now) then
      rateGive(limits, now)
      return {'no', 'concurrency_limit_exceeded', '0'}
    end
  end

  -- R4, R5 (as tollgate_reserve_one): entitlements covering the alias, soonest expiry first, then
  -- credit at the alias's price; the whole estimate or nothing. R2b: `tokens` the entitlements
  -- cover, `units` they give for them (a weighted one gives the package rate per token).
  local need = estIn + estOut
  local takes = {}
  local tokens, units = 0, 0
  for _, s in ipairs(sources) do
    if tokens >= need then break end
    if s ~= 'c' then
      local free, per = num(st['r:' .. s]), unitRate(st, s, rate)
      if free >= per and usable(st, s, alias, now) then
        local covered = math.min(need - tokens, math.floor(free / per))
        takes[#takes + 1] = { s, covered * per, per }
        tokens = tokens + covered
        units = units + covered * per
      end
    end
    if s == cut then break end
  end
  local credit = 0
  local short = nil
  local priced = inPrice ~= '' and outPrice ~= ''
  -- R5: an input token may turn out to be a cache write or read; the estimate pays the highest.
  local prices = priced and priceList(inPrice) or nil
  if tokens < need then
    local covered = false
    if priced and (cut == '' or cut == 'c') then
      local coveredIn = math.min(tokens, estIn)
      local highest = math.max(prices[1], prices[2], prices[3], prices[4])
      local cost = (estIn - coveredIn) * highest + (estOut - (tokens - coveredIn)) * tonumber(outPrice) + prices[5]
      if cost <= num(st['r:c']) then
        credit = cost
        covered = true
      end
    end
    if not covered then
      -- R6
      short = ((not priced) or anyCovering(alias)) and 'insufficient_tokens' or 'insufficient_credits'
    end
  end
  -- R7: the overrun cover (RESERVE_OVERRUN_COVER_PERCENT), per pool, as in Postgres.
  if not short and cover > 0 and units > 0 then
    local poolHeld, poolFree = 0, 0
    -- Held by calls in flight on any entitlement, also one expired since (its calls may overrun).
    for field, value in pairs(st) do
      if string.sub(field, 1, 2) == 'h:' and field ~= 'h:c' then poolHeld = poolHeld + num(value) end
    end
    for _, s in ipairs(sources) do
      if s ~= 'c' and num(st['r:' .. s]) >= unitRate(st, s, rate) and usable(st, s, alias, now) then
        poolFree = poolFree + num(st['r:' .. s])
      end
    end
    if poolHeld > 0 and (poolFree - units) * 100 < cover * (poolHeld + units) then short = 'insufficient_tokens' end
  end
  if not short and cover > 0 and credit > 0 then
    local held, free = num(st['h:c']), num(st['r:c'])
    if held > 0 and (free - credit) * 100 < cover * (held + credit) then short = 'insufficient_credits' end
  end
  if short and cut ~= '' then
    -- R21: the lease cannot answer for this call, and Postgres holds more of the account: a
    -- top-up (this call asks again, counted then), else the call is made in Postgres, which
    -- answers with everything the account has. Only a call the lease cannot cover goes there.
    if limits then rateGive(limits, now) end
    if topupAllowed then return {'topup', st['lease']} end
    return {'postgres'}
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
    legs[#legs + 1] = 'e:' .. s .. ':' .. fmt(take[2]) .. (take[3] > 1 and (':' .. fmt(take[3])) or '')
  end
  if credit > 0 then
    set('r:c', fmt(num(st['r:c']) - credit))
    set('h:c', fmt(num(st['h:c']) + credit))
    legs[#legs + 1] = 'c:c:' .. fmt(credit) .. ':' .. inPrice .. ':' .. outPrice
  end
  local legText = table.concat(legs, ';')
  -- The call's concurrency slot: taken here, renewed while its gateway runs it (slots.lua), freed
  -- when it finishes (finish.lua, sweep.lua) or, if its gateway stops renewing it, by expiring.
  local slots = ''
  if limits and limits.keySlots > 0 then
    slotTake(limits, now, id, leaseTtl)
    slots = limits.keyLeases
    if limits.planSlots > 0 then slots = slots .. ',' .. limits.planLeases end
  end
  redis.call('HSET', KEYS[KEY.calls], id, inFlight({ keyId = keyId, alias = alias, surface = surface,
    created = createdUs, estIn = fmt(estIn), estOut = fmt(estOut), reservedTokens = fmt(units),
    reservedCredits = fmt(credit), legs = legText, slots = slots }))
  reserved = reserved + 1
  return {'ok', legText, fmt(units), fmt(credit), limits and budgetText(limits) or '', pinnedOf(a, k)}
end

local results = {}
for i = 1, count do
  results[i] = reserveOne(ARGS_HEAD + (i - 1) * ITEM_ARGS, KEYS_HEAD + (i - 1) * ITEM_KEYS)
end
if reserved > 0 then set('last', fmt(now)) end
writeHash(KEYS[KEY.lease], changed)
return results
