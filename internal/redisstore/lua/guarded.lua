-- Guarded: an acquisition behind the restart guard (see WithRestartGuard).
-- The marker holds the server time, in ms, at which a guarded store first
-- saw the server; until maxTTL has passed since, nothing is granted. A
-- fenced acquisition takes the next value of the fence counter, lifted
-- when behind the server's clock as Lift does.
--
-- KEYS: lock, counter, marker. ARGV: token, ttl (ms), maxTTL (ms), "1" to
-- hand out a fence, lead of a lift (µs).
-- Returns -ms while the server recovers (ms to wait, at least 1), 0 if
-- the resource is held, and otherwise the fence (1 when not fenced).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local since = redis.call('GET', KEYS[3])
if not since then
	redis.call('SET', KEYS[3], string.format('%.0f', now))
	return -tonumber(ARGV[3])
end
local left = tonumber(since) + tonumber(ARGV[3]) - now
if left > 0 then
	return -left
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then
		return redis.error_reply('WRONGTYPE the lock key holds a value that is not a lock')
	end
	return 0
end
if ARGV[4] ~= '1' then
	return 1
end
local c = redis.call('INCR', KEYS[2])
local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
if c < us then
	local q = tonumber(ARGV[5]) / 2
	us = math.ceil((us + q) / q) * q + 1 -- as in lift.lua
	redis.call('SET', KEYS[2], string.format('%.0f', us))
	return us
end
return c
