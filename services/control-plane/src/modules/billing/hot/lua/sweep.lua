-- The reconciler's pass over one lease: calls in flight past the reservation timeout are held
-- (settlement_missing, R13) and returned with finished calls Postgres has not had for a while
-- (their control plane stopped); expired tombstones go; a lease idle long enough, with nothing in
-- flight or unwritten, is removed from Redis, to be closed in Postgres. Every time is by clockNow
-- (Redis TIME), as the reservations' and the tombstones'. KEYS and ARGV: hot-layout.ts.
-- Returns {'absent', claimed} | {'other'} | {'closed'} | {'open', record...}.
local st = loadHash(KEYS[KEY.lease])
if st['lease'] == nil then return {'absent', redis.call('EXISTS', KEYS[KEY.claim])} end
if st['lease'] ~= ARGV[ARG.leaseId] then return {'other'} end
local now, timeout = clockNow(ARGV[ARG.clockOffsetMs]), tonumber(ARGV[ARG.timeoutMs])
local unwritten, idle = tonumber(ARGV[ARG.unwrittenMs]), tonumber(ARGV[ARG.idleMs])
local results = {'open'}
local live = 0
local calls = redis.call('HGETALL', KEYS[KEY.calls])
for i = 1, #calls, 2 do
  local id, value = calls[i], calls[i + 1]
  local kind = string.sub(value, 1, 1)
  local text = string.sub(value, 3)
  if kind == 'G' then
    if num(text) < now then redis.call('HDEL', KEYS[KEY.calls], id) end
  elseif kind == 'D' then
    live = live + 1
    -- Finished a while ago and still not in Postgres: its control plane stopped.
    if num(fields(text)[RECORD.at]) + unwritten < now then results[#results + 1] = text end
  else
    live = live + 1
    local call = fields(text)
    if math.floor(tonumber(call[CALL.created]) / 1000) + timeout < now then
      freeSlots(id, call)
      local r = finishedRecord(id, 'hold', 'held', 'settlement_missing', '', st['lease'], call, fmt(now))
      for _, leg in ipairs(parseLegs(r.legs)) do
        redis.call('HSET', KEYS[KEY.lease], 'h:' .. leg.source,
          fmt(num(redis.call('HGET', KEYS[KEY.lease], 'h:' .. leg.source)) - leg.amount))
      end
      local finished = record(r)
      redis.call('HSET', KEYS[KEY.calls], id, 'D|' .. finished)
      results[#results + 1] = finished
    end
  end
end
if live == 0 and num(st['last']) + idle <= now then
  redis.call('DEL', KEYS[KEY.lease], KEYS[KEY.calls])
  return {'closed'}
end
return results
