--#include permit_prelude
-- AcquirePermit: take one of limit permits on a resource under a token,
-- with a fence.
--
-- A resource's permits are one sorted set: each holder's token scored by
-- its expiry (server time, ms), and the member "" scored by minus the
-- limit they were taken under. Expired members are removed before
-- anything is counted, the key expires with its last permit, and a
-- release of the last one deletes it: nothing stays behind.
--
-- Behind the restart guard (ARGV[4] ~= "0"), nothing is granted until
-- maxTTL has passed since the marker was written, as in guarded.lua. The
-- fence is the next value of the fence counter, lifted when behind the
-- server's clock as in lift.lua.
--
-- Runs after permit_prelude.lua (t, now; expired permits removed).
--
-- KEYS: permits, fence counter, restart guard marker (with the guard).
-- ARGV: token, limit, ttl (ms), maxTTL (ms; "0": no guard), lift lead (µs).
-- Returns the fence (> 0) if taken; 0 if all limit permits are held, or
-- one is held under the token already; -ms while the server recovers;
-- and, as a string, the limit the permits held were taken under if it is
-- not ARGV[2] (nothing is changed then).
if ARGV[4] ~= '0' then
	local since = redis.call('GET', KEYS[3])
	if not since then
		redis.call('SET', KEYS[3], string.format('%.0f', now))
		return -tonumber(ARGV[4])
	end
	local left = tonumber(since) + tonumber(ARGV[4]) - now
	if left > 0 then
		return -left
	end
end
local limit = tonumber(ARGV[2])
local held = redis.call('ZCARD', KEYS[1])
if held > 0 then
	local was = redis.call('ZSCORE', KEYS[1], '')
	if not was then
		return redis.error_reply('WRONGTYPE the permits key holds a sorted set without a limit')
	end
	held = held - 1
	if held > 0 and -tonumber(was) ~= limit then
		return string.format('%.0f', -tonumber(was))
	end
	if held >= limit or redis.call('ZSCORE', KEYS[1], ARGV[1]) then
		return 0
	end
end
local expiry = string.format('%.0f', now + tonumber(ARGV[3]))
redis.call('ZADD', KEYS[1], -limit, '', expiry, ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
local c = redis.call('INCR', KEYS[2])
local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
if c < us then
	local q = tonumber(ARGV[5]) / 2
	us = math.ceil((us + q) / q) * q + 1 -- as in lift.lua
	redis.call('SET', KEYS[2], string.format('%.0f', us))
	return us
end
return c
