-- Pass: hand a wake on. A subscription woken by a release that has no
-- caller waiting any more wakes the next waiter in line, if the lock is
-- still free or reserved for the subscription (see release.lua), and
-- hands the reservation on to it; with nobody in line, the reservation is
-- deleted.
--
-- KEYS: lock, waiters. ARGV: the subscription's reservation, and the
-- reservation's prefix and TTL (ms), as release.lua takes them.
-- Returns 1 if it woke someone.
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then
	return 0
end
local w = redis.call('LPOP', KEYS[2])
if not w then
	if v then
		redis.call('DEL', KEYS[1])
	end
	return 0
end
if v then
	redis.call('SET', KEYS[1], ARGV[2] .. w, 'PX', ARGV[3])
end
redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
return 1
