--#include permit_prelude
-- ReleasePermit: free the permit held under a token, and wake the first
-- waiter in line for a permit, as release.lua does for a lock. An expired
-- permit is not held. The last permit's release deletes the key;
-- otherwise the key expires with the last permit left.
--
-- Runs after permit_prelude.lua (now; expired permits removed).
--
-- KEYS: permits (see permit_acquire.lua), waiters. ARGV: token.
-- Returns 0 if not held, 1 if released, 2 if released and a waiter woken.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
	return 0
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[1] == nil or last[1] == '' then
	redis.call('DEL', KEYS[1])
else
	redis.call('PEXPIREAT', KEYS[1], last[2])
end
local w = redis.call('LPOP', KEYS[2])
if w then
	redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
	return 2
end
return 1
