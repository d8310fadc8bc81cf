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
-- KEYS: lock, waiters. ARGV: subscription id, queue margin (ms), "1" to
-- get in line at the front.
local ms = redis.call('PTTL', KEYS[1])
if ms == -2 then
	return -2
end
if ARGV[3] == '1' then
	redis.call('LPUSH', KEYS[2], ARGV[1])
else
	redis.call('RPUSH', KEYS[2], ARGV[1])
end
local ttl = tonumber(ARGV[2])
if ms > 0 then
	ttl = ttl + ms
end
redis.call('PEXPIRE', KEYS[2], ttl)
return ms
