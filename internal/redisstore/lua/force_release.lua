-- ForceRelease: delete the lock whoever holds it and, like Release, wake
-- the first waiter in line on its own channel. The GET raises WRONGTYPE
-- on a key of another type (some other program's data, not a lock),
-- which is left alone.
--
-- KEYS: lock, waiters. Returns 1 if a lock was deleted, 0 if it was free.
if not redis.call('GET', KEYS[1]) then
	return 0
end
redis.call('DEL', KEYS[1])
local w = redis.call('LPOP', KEYS[2])
if w then
	redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
end
return 1
