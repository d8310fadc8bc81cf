-- ForceRelease: delete the lock whoever holds it and, like Release, wake
-- the first waiter in line on its own channel.
--
-- KEYS: lock, waiters. Returns 1 if a lock was deleted, 0 if it was free.
if redis.call('DEL', KEYS[1]) == 0 then
	return 0
end
local w = redis.call('LPOP', KEYS[2])
if w then
	redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
end
return 1
