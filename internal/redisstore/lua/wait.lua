-- Wait: put a waiting subscription in line for the next release of a held
-- lock, and return the lock's PTTL: -2 (free: nothing queued), -1 (no
-- TTL) or the milliseconds left. The queue lives as long as the lock plus
-- a margin, refreshed by every waiter that joins it, so that entries left
-- by waiters that went away do not outlive the contention.
--
-- A waiter that a release woke but that found the lock taken again (by a
-- caller that did not wait in line) gets back in line at the front
-- (ARGV[3] = "1"), so that it keeps its turn.
--
-- A free lock with subscriptions in line is being handed to the first of
-- them, woken by the release: with ARGV[4] = "1" the waiter gets in line
-- behind them instead of taking it, and the script returns -3 (look again
-- in a moment, with ARGV[4] = "0", in case the line holds only waiters
-- that went away).
--
-- A caller that looks again (the lock expired, was extended, or the
-- handoff's grace ran out) keeps the place it had: it gets in line only
-- if its subscription is in line fewer times than it has callers waiting
-- (ARGV[5]; "0" for a caller's first look, which always gets in line).
-- The first look of a subscription's only caller ("r") takes the
-- subscription's entries out of line before it gets in: they were left
-- by callers that stopped waiting without a wake (they found the lock
-- free, or gave up), and would otherwise wake the newcomer ahead of
-- everyone who got in line after them, and pile up.
--
-- A key of another type at the lock's name is a WRONGTYPE error, as in
-- GET: PTTL alone would report it as a lock held, which no release frees.
--
-- KEYS: lock, waiters. ARGV: subscription id, queue margin (ms), "1" to
-- get in line at the front, "1" to get in line behind a handoff, the
-- number of the subscription's callers waiting, "0" or "r".
local ms = redis.call('PTTL', KEYS[1])
if ms ~= -2 and redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then
	return redis.error_reply('WRONGTYPE the lock key holds a value that is not a lock')
end
if ms == -2 then
	if ARGV[4] ~= '1' or redis.call('LLEN', KEYS[2]) == 0 then
		return -2
	end
	ms = -3
end
if ARGV[5] == 'r' then
	redis.call('LREM', KEYS[2], 0, ARGV[1])
end
if ARGV[3] == '1' then
	redis.call('LPUSH', KEYS[2], ARGV[1])
elseif ARGV[5] == '0' or ARGV[5] == 'r' or #redis.call('LPOS', KEYS[2], ARGV[1], 'COUNT', ARGV[5]) < tonumber(ARGV[5]) then
	redis.call('RPUSH', KEYS[2], ARGV[1])
end
local ttl = tonumber(ARGV[2])
if ms > 0 then
	ttl = ttl + ms
end
redis.call('PEXPIRE', KEYS[2], ttl)
return ms
