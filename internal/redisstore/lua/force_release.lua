-- ForceRelease: free the lock whoever holds it and, like Release, hand it
-- to the first waiter in line (see grant.lua): a queued acquisition is
-- granted it, a WaitRelease waiter woken on its own channel (the lock
-- deleted). The GET raises WRONGTYPE on a key of another type (some other
-- program's data, not a lock), which is left alone.
--
-- KEYS: lock, waiters, fence counter.
-- Returns 1 if a lock was freed, 0 if it was free.
if not redis.call('GET', KEYS[1]) then
	return 0
end
--#include grant
local how, w = grant(KEYS[1], KEYS[2], KEYS[3], nil)
if how ~= 'g' then
	redis.call('DEL', KEYS[1])
end
if how == 'w' then
	redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
end
return 1
