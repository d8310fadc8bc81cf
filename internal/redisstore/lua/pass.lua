-- Pass: hand a wake on. A subscription woken by a release that has no
-- caller waiting any more wakes the next waiter in line, if the lock is
-- still free.
--
-- KEYS: lock, waiters. Returns 1 if it woke someone.
if redis.call('EXISTS', KEYS[1]) == 1 then
	return 0
end
local w = redis.call('LPOP', KEYS[2])
if not w then
	return 0
end
redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
return 1
