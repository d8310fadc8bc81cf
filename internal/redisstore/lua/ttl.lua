-- TTL: the lock's PTTL: -2 if there is no lock, -1 if the key has no TTL,
-- else the milliseconds left. A key of another type is a WRONGTYPE error,
-- as in GET: PTTL alone would report it as a lock held.
--
-- KEYS: lock.
local t = redis.call('TYPE', KEYS[1])['ok']
if t ~= 'string' and t ~= 'none' then
	return redis.error_reply('WRONGTYPE the lock key holds a value that is not a lock')
end
return redis.call('PTTL', KEYS[1])
