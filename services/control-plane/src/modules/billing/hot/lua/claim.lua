-- A control plane about to open a lease claims the account first, so only one installs one.
-- KEYS and ARGV: hot-layout.ts. Returns 'present' (a lease is installed), 'busy' (another holds
-- the claim), 'claimed'/'ok', or 'lost'.
if redis.call('HEXISTS', KEYS[KEY.lease], 'lease') == 1 then return 'present' end
local holder = redis.call('GET', KEYS[KEY.claim])
if ARGV[ARG.mode] == 'claim' then
  if holder then return 'busy' end
  redis.call('SET', KEYS[KEY.claim], ARGV[ARG.token], 'PX', ARGV[ARG.ttlMs])
  return 'claimed'
end
if holder ~= ARGV[ARG.token] then return 'lost' end
redis.call('PEXPIRE', KEYS[KEY.claim], ARGV[ARG.ttlMs])
return 'ok'
