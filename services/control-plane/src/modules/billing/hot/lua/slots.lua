-- Renews the concurrency slots of calls in flight whose gateway still runs them: each slot's
-- expiry is pushed to now + ttlMs in the lease sets the call took it in (reserve.lua). A call
-- finished or unknown is skipped, so a late renewal never takes a freed slot back. A gateway that
-- stops (killed) stops renewing, and its calls' slots expire within ttlMs. KEYS and ARGV:
-- hot-layout.ts. Returns how many slots were renewed.
local now = clockNow(ARGV[ARG.clockOffsetMs])
local ttl = tonumber(ARGV[ARG.ttlMs])
local renewed = 0
for i = 1, tonumber(ARGV[ARG.count]) do
  local id = ARGV[ARGS_HEAD + (i - 1) * ITEM_ARGS + ITEM_ARG.id]
  local existing = redis.call('HGET', KEYS[KEY.calls], id)
  if existing and string.sub(existing, 1, 1) == 'R' then
    local sets = split(fields(string.sub(existing, 3))[CALL.slots] or '', ',')
    for _, set in ipairs(sets) do
      redis.call('ZADD', set, 'XX', now + ttl, id)
      redis.call('PEXPIRE', set, ttl)
    end
    if #sets > 0 then renewed = renewed + 1 end
  end
end
return renewed
