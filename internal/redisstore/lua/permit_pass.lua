-- PassPermit: hand a wake on, as pass.lua does for a lock: a
-- subscription woken by a permit's release that has no caller waiting any
-- more wakes the next waiter in line, if a permit is still free.
--
-- KEYS: permits (see permit_acquire.lua), waiters. Returns 1 if it woke
-- someone.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = redis.call('ZSCORE', KEYS[1], '')
if limit and redis.call('ZCOUNT', KEYS[1], now, '+inf') >= -tonumber(limit) then
	return 0
end
local w = redis.call('LPOP', KEYS[2])
if not w then
	return 0
end
redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
return 1
