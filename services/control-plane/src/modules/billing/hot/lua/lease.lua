-- Writes a lease's state as Postgres has it (R21). 'install': a new lease, only by the claim's
-- holder and only while none is installed. 'sync': the same lease with a newer (or the same)
-- version: each source's free part moves by the change of its net amount. Sources come in draw
-- order (R4). KEYS and ARGV: hot-layout.ts. Returns 'installed' | 'synced' | 'lost' | 'stale'.
local mode, leaseId, version = ARGV[ARG.mode], ARGV[ARG.leaseId], tonumber(ARGV[ARG.version])
local now = fmt(clockNow(ARGV[ARG.clockOffsetMs]))
local st = loadHash(KEYS[KEY.lease])
if mode == 'install' then
  if st['lease'] ~= nil or redis.call('GET', KEYS[KEY.claim]) ~= ARGV[ARG.token] then return 'lost' end
  redis.call('DEL', KEYS[KEY.claim])
  st = {}
elseif st['lease'] ~= leaseId or num(st['ver']) > version then
  return 'stale'
end
-- Postgres's state is taken in whole: nothing more to take (`more`) until it changes again; `cut`
-- says where the lease stops when the account has more than its bound (R21).
local values = {'lease', leaseId, 'ver', fmt(version), 'more', '0', 'cut', ARGV[ARG.cut], 'tried', now}
if mode == 'install' then
  values[#values + 1] = 'last'
  values[#values + 1] = now
end
local order = {}
local count = tonumber(ARGV[ARG.count])
for i = 1, count do
  local a = ARGS_HEAD + (i - 1) * ITEM_ARGS
  local s, net = ARGV[a + ITEM_ARG.id], tonumber(ARGV[a + ITEM_ARG.net])
  order[#order + 1] = s
  local delta = netChange(net, num(st['n:' .. s]))
  for _, pair in ipairs({ {'n:' .. s, fmt(net)}, {'r:' .. s, fmt(num(st['r:' .. s]) + delta)},
                          {'h:' .. s, fmt(num(st['h:' .. s]))}, {'x:' .. s, ARGV[a + ITEM_ARG.expiresAt]},
                          {'a:' .. s, ARGV[a + ITEM_ARG.aliases]}, {'w:' .. s, ARGV[a + ITEM_ARG.weighted]} }) do
    values[#values + 1] = pair[1]
    values[#values + 1] = pair[2]
  end
end
values[#values + 1] = 'order'
values[#values + 1] = table.concat(order, ',')
redis.call('HSET', KEYS[KEY.lease], unpack(values))
return mode == 'install' and 'installed' or 'synced'
