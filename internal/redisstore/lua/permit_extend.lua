--#include permit_prelude
-- ExtendPermit: set the expiry of the permit held under a token to ttl
-- from now. An expired permit is removed first, so it is never re-created.
--
-- Runs after permit_prelude.lua (now; expired permits removed).
--
-- KEYS: permits (see permit_acquire.lua). ARGV: token, ttl (ms).
-- Returns 1 if extended, 0 if not held.
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
	return 0
end
redis.call('ZADD', KEYS[1], 'XX', string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return 1
