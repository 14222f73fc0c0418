-- Postgres has these finished calls: Redis forgets them, but for a release or hold of a call it
-- never saw, which stays as a tombstone for `tombstoneMs` (its reserve may still be on its way, R8).
-- KEYS and ARGV: hot-layout.ts.
local count = tonumber(ARGV[ARG.count])
local untilMs = fmt(clockNow(ARGV[ARG.clockOffsetMs]) + tonumber(ARGV[ARG.tombstoneMs]))
for i = 1, count do
  local id = ARGV[ARGS_HEAD + (i - 1) * ITEM_ARGS + ITEM_ARG.id]
  local value = redis.call('HGET', KEYS[KEY.calls], id)
  if value and string.sub(value, 1, 1) == 'D' then
    -- The record's action (its second field) and forgotten (its last), read where they stand
    -- rather than by splitting all its fields (hot-layout.test.ts holds them there).
    local forgotten = string.sub(value, -2) == '|1'
    local settle = string.find(value, '^D|[^|]*|settle|') ~= nil
    if forgotten and not settle then
      redis.call('HSET', KEYS[KEY.calls], id, 'G|' .. untilMs)
    else
      redis.call('HDEL', KEYS[KEY.calls], id)
    end
  end
end
return 0
