--#include permit_prelude
-- PassPermit: hand a wake on, as pass.lua does for a lock: a
-- subscription woken by a permit's release that has no caller waiting any
-- more wakes the next waiter in line, if a permit is still free.
-- Runs after permit_prelude.lua (expired permits removed).
--
-- KEYS: permits (see permit_acquire.lua), waiters. Returns 1 if it woke
-- someone.
local limit = redis.call('ZSCORE', KEYS[1], '')
if limit and redis.call('ZCARD', KEYS[1]) - 1 >= -tonumber(limit) then
	return 0
end
local w = redis.call('LPOP', KEYS[2])
if not w then
	return 0
end
redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
return 1
