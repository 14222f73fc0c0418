-- Finishes a batch of one account's calls: settle, release or hold (R9 to R14), as
-- tollgate_settle_legs and tollgate_charge_available do in Postgres. The finished call is kept
-- (D|record) until Postgres has it (a repeat answers from there). A call Redis does not know is
-- answered `unknown` (the control plane looks in Postgres first), or, with `forgotten` set,
-- charged from the lease as a reservation lost with Redis (R11); a release or hold of one leaves a
-- tombstone once written, so its reserve, if it arrives later, reserves nothing (R8).
--
-- A settle may draw beyond its reservation from whatever the account has (R10), so while Postgres
-- may hold more than the lease (a grant since), nothing is finished: every call answers
-- {'topup', lease id}, and the control plane tops the lease up and asks again.
-- KEYS and ARGV: hot-layout.ts. Returns per call: {'done', record} | {'unknown'} | {'cold'} |
-- {'topup', lease id}.
-- R16: every expiry this script decides is by clockNow (Redis TIME).
local now = clockNow(ARGV[ARG.clockOffsetMs])
local st = loadHash(KEYS[KEY.lease])
local hot = st['lease'] ~= nil
local changed = {}
local function set(field, value) st[field] = value; changed[field] = value end
local function add(field, delta) set(field, fmt(num(st[field]) + delta)) end
local sources = hot and split(st['order'] or '', ',') or {}
local forgotten = ARGV[ARG.forgotten] == '1'
local count = tonumber(ARGV[ARG.count])
local finished = 0
if hot and ARGV[ARG.topupAllowed] == '1' and st['more'] == '1' then
  for i = 1, count do
    if ARGV[ARGS_HEAD + (i - 1) * ITEM_ARGS + ITEM_ARG.action] == 'settle' then
      local results = {}
      for j = 1, count do results[j] = {'topup', st['lease']} end
      return results
    end
  end
end

-- a: where the call's arguments start (ARGV[a + ITEM_ARG.<name>]).
local function finishOne(a)
  local id, action = ARGV[a + ITEM_ARG.id], ARGV[a + ITEM_ARG.action]
  local existing = redis.call('HGET', KEYS[KEY.calls], id)
  local kind = existing and string.sub(existing, 1, 1) or nil
  if kind == 'D' then return {'done', string.sub(existing, 3)} end
  if kind ~= 'R' and not forgotten then return {'unknown'} end
  if not hot then return {'cold'} end
  local call
  local legs = {}
  if kind == 'R' then
    call = fields(string.sub(existing, 3))
    legs = parseLegs(call[CALL.legs] or '')
    freeSlots(id, call)
  else
    call = {}
    call[CALL.keyId], call[CALL.alias], call[CALL.surface] =
      ARGV[a + ITEM_ARG.keyId], ARGV[a + ITEM_ARG.alias], ARGV[a + ITEM_ARG.surface]
    call[CALL.created] = ARGV[a + ITEM_ARG.created]
    call[CALL.estIn], call[CALL.estOut], call[CALL.reservedTokens], call[CALL.reservedCredits] = '0', '0', '0', '0'
    call[CALL.legs] = ''
  end
  local status = action == 'release' and 'released' or (action == 'hold' and 'held' or 'settled')
  local r = finishedRecord(id, action, status, ARGV[a + ITEM_ARG.outcome], ARGV[a + ITEM_ARG.httpStatus],
    st['lease'], call, fmt(now))
  if kind ~= 'R' then r.forgotten = '1' end

  if action == 'release' then
    -- R12
    for _, leg in ipairs(legs) do
      add('r:' .. leg.source, leg.amount)
      add('h:' .. leg.source, -leg.amount)
    end
  elseif action == 'hold' then
    -- R13: what it holds leaves the lease for the held row; an admin or the hold timeout settles it.
    for _, leg in ipairs(legs) do add('h:' .. leg.source, -leg.amount) end
  else
    -- R9: the usage, from the legs in draw order.
    r.usageIn, r.usageOut = ARGV[a + ITEM_ARG.usageIn], ARGV[a + ITEM_ARG.usageOut]
    -- R2a: the parts, in the order package tokens cover them.
    local rest = usageParts(r.usageIn, r.usageOut)
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
        -- R2b: whole tokens at the rate the leg recorded.
        local take = math.min(math.floor(leg.amount / leg.rate), partsTotal(rest))
        local takeIn, takeOut = takeParts(rest, take)
        legIn = legIn + takeIn
        legOut = legOut + takeOut
        add('r:' .. leg.source, leg.amount - take * leg.rate)
        charge(leg.source, take * leg.rate)
      else
        -- Each part at the prices the leg recorded, plus its price per call.
        local cost = partsCost(rest, priceList(leg.ip), leg.op)
        local take = math.min(cost, leg.amount)
        add('r:c', leg.amount - take)
        charge('c', take)
        extra = cost - take
        r.creditTake, r.creditIn, r.creditOut = fmt(take), leg.ip, leg.op
        rest = { 0, 0, 0, 0, 0 }
      end
    end
    r.legTakeIn, r.legTakeOut = fmt(legIn), fmt(legOut)
    -- R10: usage beyond the reservation, from what the lease has free, then credit; the rest is
    -- written off (computed exactly by the control plane).
    local owed = extra
    if partsTotal(rest) > 0 then
      local overIn, overOut = 0, 0
      -- R2b: a weighted entitlement at the alias's package rate of now.
      local rate = math.max(1, num(ARGV[a + ITEM_ARG.packageRate]))
      for _, s in ipairs(sources) do
        if partsTotal(rest) <= 0 then break end
        local free, per = num(st['r:' .. s]), unitRate(st, s, rate)
        if s ~= 'c' and free >= per and usable(st, s, r.alias, now) then
          local take = math.min(partsTotal(rest), math.floor(free / per))
          local takeIn, takeOut = takeParts(rest, take)
          overIn = overIn + takeIn
          overOut = overOut + takeOut
          add('r:' .. s, -take * per)
          charge(s, take * per)
        end
      end
      r.overTakeIn, r.overTakeOut = fmt(overIn), fmt(overOut)
      local inPrice, outPrice = ARGV[a + ITEM_ARG.inputPrice], ARGV[a + ITEM_ARG.outputPrice]
      if partsTotal(rest) > 0 and inPrice ~= '' and outPrice ~= '' then
        owed = owed + partsCost(rest, priceList(inPrice), outPrice)
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
  redis.call('HSET', KEYS[KEY.calls], id, 'D|' .. text)
  finished = finished + 1
  return {'done', text}
end

local results = {}
for i = 1, count do
  results[i] = finishOne(ARGS_HEAD + (i - 1) * ITEM_ARGS)
end
if finished > 0 and hot then set('last', fmt(now)) end
if hot then writeHash(KEYS[KEY.lease], changed) end
return results
