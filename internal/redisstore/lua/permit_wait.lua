-- WaitPermit: put a waiting subscription in line for the next release of
-- a permit when every permit is held, as wait.lua does for a lock, and
-- return how long until the first permit expires. The waiters' queue
-- lives as long as the last permit plus a margin, refreshed by every
-- waiter that joins it.
-- Runs after permit_prelude.lua (now; expired permits removed).
--
-- KEYS: permits (see permit_acquire.lua), waiters. ARGV: subscription id
-- ("" to look without getting in line), queue margin (ms), "1" to get in
-- line at the front.
-- Returns -2 if a permit is free (nothing queued), otherwise the
-- milliseconds until the first permit expires.
local limit = redis.call('ZSCORE', KEYS[1], '')
if not limit or redis.call('ZCARD', KEYS[1]) - 1 < -tonumber(limit) then
	return -2
end
-- The permits by expiry: the limit first (scored below every expiry),
-- then the first permit to expire.
local first = redis.call('ZRANGE', KEYS[1], 1, 1, 'WITHSCORES')
local ms = tonumber(first[2]) - now
if ARGV[1] == '' then
	return ms
end
if ARGV[3] == '1' then
	redis.call('LPUSH', KEYS[2], ARGV[1])
else
	redis.call('RPUSH', KEYS[2], ARGV[1])
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[2], tonumber(last[2]) - now + tonumber(ARGV[2]))
return ms
