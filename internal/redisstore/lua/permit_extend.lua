-- ExtendPermit: set the expiry of the permit held under a token to ttl
-- from now. An expired permit is removed first, so it is never re-created.
--
-- KEYS: permits (see permit_acquire.lua). ARGV: token, ttl (ms).
-- Returns 1 if extended, 0 if not held.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local pruned = redis.pcall('ZREMRANGEBYSCORE', KEYS[1], 0, '(' .. now)
if type(pruned) == 'table' and pruned.err then
	return redis.error_reply(pruned.err)
end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
	return 0
end
redis.call('ZADD', KEYS[1], 'XX', string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return 1
