-- ForceRelease: free the lock whoever holds it and, like Release, hand it
-- to the first waiter in line (see grant.lua): a queued acquisition is
-- granted it, a WaitRelease waiter woken on its own channel (the lock
-- deleted). The GET raises WRONGTYPE on a key of another type (some other
-- program's data, not a lock), which is left alone; a waiters' key of
-- another type than a list is a WRONGTYPE error that names the waiters'
-- key, before anything is changed.
--
-- KEYS: lock, waiters, fence counter.
-- Returns 1 if a lock was freed, 0 if it was free.
if not redis.call('GET', KEYS[1]) then
	return 0
end
local wt = redis.call('TYPE', KEYS[2])['ok']
if wt ~= 'none' and wt ~= 'list' then
	return redis.error_reply('WRONGTYPE the waiters key holds a value that is not a queue of waiters')
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
