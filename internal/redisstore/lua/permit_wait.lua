-- WaitPermit: put a waiting subscription in line for the next release of
-- a permit when every permit is held, as wait.lua does for a lock, and
-- return how long until the first permit expires. The waiters' queue
-- lives as long as the last permit plus a margin, refreshed by every
-- waiter that joins it.
--
-- KEYS: permits (see permit_acquire.lua), waiters. ARGV: subscription id
-- ("" to look without getting in line), queue margin (ms), "1" to get in
-- line at the front.
-- Returns -2 if a permit is free (nothing queued), otherwise the
-- milliseconds until the first permit expires.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = redis.pcall('ZCOUNT', KEYS[1], now, '+inf')
if type(live) == 'table' and live.err then
	return redis.error_reply(live.err)
end
local limit = redis.call('ZSCORE', KEYS[1], '')
if live == 0 or not limit or live < -tonumber(limit) then
	return -2
end
local first = redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
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
