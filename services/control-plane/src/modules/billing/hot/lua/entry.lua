-- Writes a key's or account's entry unless Redis has a newer one. An entry marked as changing
-- (a change under way in Postgres) is replaced only by its own version or a newer one, or by
-- anything once its mark has expired (the change was rolled back).
-- KEYS and ARGV: hot-layout.ts. Returns 'written' | 'older'.
local raw = redis.call('GET', KEYS[KEY.entry])
if raw then
  local version, state, rest = string.match(raw, '^([^|]*)|([^|]*)|?(.*)$')
  local expired = state == 'changing' and tonumber(rest) < tonumber(ARGV[ARG.now])
  if tonumber(version) > tonumber(ARGV[ARG.version]) and not expired then return 'older' end
end
redis.call('SET', KEYS[KEY.entry], ARGV[ARG.entry], 'PX', ARGV[ARG.ttlMs])
return 'written'
