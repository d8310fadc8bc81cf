-- Queue: a queued acquisition (AcquireQueued). It takes the lock if it is
-- free and nobody waits for it; otherwise it gets in line, in the
-- waiters' queue, where a release grants it the lock (see grant.lua).
-- Looking again (when the lock may have expired, or now and then), it
-- keeps its place, and takes the lock if it is free and its turn has come.
--
-- A free lock with waiters in line is handed to the first of them here,
-- as a release would: the lock expired, or its holder went away; this
-- acquisition gets in line behind them first (if it is not in line yet),
-- and takes the lock itself if its own entry comes first.
--
-- The waiters' queue lives as long as the lock plus a margin, refreshed
-- by every waiter that gets in line or looks again.
--
-- KEYS: lock, waiters, fence counter. ARGV: the acquisition's entry (see
-- grant.lua: "id:ttl:fenced:token"), "1" for the first call (the entry is
-- not in line), "0" to look again, the queue margin (ms), and to wake a
-- WaitRelease waiter, the reservation's prefix and TTL (ms) as release.lua
-- takes them.
-- Returns, as a string, the fence ("0" if unfenced) if the lock is taken
-- now; otherwise, as an integer, how long to wait before looking again:
-- the lock's PTTL (-1: a key without a TTL), -3 if it is being handed to
-- a WaitRelease waiter ahead, and -4 if it has been granted to this very
-- acquisition (its message is on its way). Looking again, it returns -5,
-- out of line, if the acquisition's subscription is not on this server
-- (see grant.lua: it would never be granted the lock; a first call whose
-- subscription is elsewhere finds out at its first look again).
-- A key of another type at the lock's name is a WRONGTYPE error.
--#include grant
local id, ttl, f, tok = string.match(ARGV[1], '^([^:]*):(%d+):([01]):(.*)$')
local again = ARGV[2] == '0'
if again and not listening(KEYS[2] .. ':' .. id) then
	redis.call('LREM', KEYS[2], 1, ARGV[1])
	return -5
end
local ms = redis.call('PTTL', KEYS[1])
if ms ~= -2 then
	local v = redis.pcall('GET', KEYS[1])
	if type(v) == 'table' and v.err then
		return redis.error_reply('WRONGTYPE the lock key holds a value that is not a lock')
	end
	if again and v == tok then
		return -4
	end
end
local inline = again and redis.call('LPOS', KEYS[2], ARGV[1])
if ms == -2 then
	if not inline then
		redis.call('RPUSH', KEYS[2], ARGV[1])
	end
	local how, x = grant(KEYS[1], KEYS[2], KEYS[3], ARGV[1])
	if how == 'o' then
		return x
	end
	if how == 'w' then
		if ARGV[4] then
			redis.call('SET', KEYS[1], ARGV[4] .. x, 'PX', ARGV[5])
			ms = tonumber(ARGV[5])
		else
			ms = -3
		end
		redis.pcall('SPUBLISH', KEYS[2] .. ':' .. x, '')
	else
		ms = redis.call('PTTL', KEYS[1])
	end
elseif not inline then
	redis.call('RPUSH', KEYS[2], ARGV[1])
end
local keep = tonumber(ARGV[3])
if ms > 0 then
	keep = keep + ms
end
redis.call('PEXPIRE', KEYS[2], keep)
return ms
