-- Pass: hand a wake on. A subscription woken by a release that has no
-- caller waiting any more hands the lock to the next waiter in line (see
-- grant.lua), if the lock is still free or reserved for the subscription
-- (see release.lua): a queued acquisition is granted it, a WaitRelease
-- waiter woken, with the reservation handed on to it. With nobody in
-- line, the reservation is deleted.
--
-- KEYS: lock, waiters, fence counter. ARGV: the subscription's
-- reservation, the reservation's prefix and TTL (ms), as release.lua takes
-- them.
-- Returns 1 if it woke someone.
--#include grant
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then
	return 0
end
local how, w = grant(KEYS[1], KEYS[2], KEYS[3], nil)
if not how then
	if v then
		redis.call('DEL', KEYS[1])
	end
	return 0
end
if how == 'g' then
	return 1
end
if v then
	redis.call('SET', KEYS[1], ARGV[2] .. w, 'PX', ARGV[3])
end
redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
return 1
