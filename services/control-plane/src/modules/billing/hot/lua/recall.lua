-- Takes what is free in a lease out of Redis, to be returned in Postgres under `version`, and
-- marks that Postgres may hold more (the next call short of balance tops up). Calls in flight
-- keep what they hold. KEYS and ARGV: hot-layout.ts.
-- Returns {'absent', claimed (1/0)} | {'taken', lease id, source, amount, ...}.
local st = loadHash(KEYS[KEY.lease])
if st['lease'] == nil then return {'absent', redis.call('EXISTS', KEYS[KEY.claim])} end
local result = {'taken', st['lease']}
local values = {'ver', ARGV[ARG.version], 'more', '1'}
-- Every source the lease holds free, also one it no longer draws from (an entitlement expired or
-- refunded since, to which a call gave back what it did not use).
for field, value in pairs(st) do
  local s = string.sub(field, 1, 2) == 'r:' and string.sub(field, 3) or nil
  local free = s and num(value) or 0
  if free > 0 then
    for _, pair in ipairs({ {'r:' .. s, '0'}, {'n:' .. s, fmt((num(st['n:' .. s]) - free) % NET_MOD)} }) do
      values[#values + 1] = pair[1]
      values[#values + 1] = pair[2]
    end
    result[#result + 1] = s
    result[#result + 1] = fmt(free)
  end
end
redis.call('HSET', KEYS[KEY.lease], unpack(values))
return result
