-- Postgres has these finished calls: Redis forgets them, but for a release or hold of a call it
-- never saw, which stays as a tombstone for `tombstoneMs` (its reserve may still be on its way, R8).
-- KEYS and ARGV: hot-layout.ts.
local count = tonumber(ARGV[ARG.count])
local untilMs = fmt(clockNow(ARGV[ARG.clockOffsetMs]) + tonumber(ARGV[ARG.tombstoneMs]))
for i = 1, count do
  local id = ARGV[ARGS_HEAD + (i - 1) * ITEM_ARGS + ITEM_ARG.id]
  local value = redis.call('HGET', KEYS[KEY.calls], id)
  if value and string.sub(value, 1, 1) == 'D' then
    local r = fields(string.sub(value, 3))
    if r[RECORD.forgotten] == '1' and r[RECORD.action] ~= 'settle' then
      redis.call('HSET', KEYS[KEY.calls], id, 'G|' .. untilMs)
    else
      redis.call('HDEL', KEYS[KEY.calls], id)
    end
  end
end
return 0
