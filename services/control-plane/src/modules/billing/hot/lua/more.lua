-- Postgres may hold more for this lease (a hold returned there): the next short call tops up.
-- KEYS: hot-layout.ts.
if redis.call('HEXISTS', KEYS[KEY.lease], 'lease') == 1 then redis.call('HSET', KEYS[KEY.lease], 'more', '1') end
return 0
