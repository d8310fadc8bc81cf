-- Release: if the lock holds the token, hand it to the first waiter in
-- line (see grant.lua). A queued acquisition is granted the lock. A
-- WaitRelease waiter is woken: given a reservation's prefix, the lock is
-- set to the prefix followed by the waiter's subscription id for the
-- reservation's TTL (only that subscription's processes can take it:
-- claim.lua), otherwise deleted, and the release announced on the
-- waiter's shard channel (SPUBLISH, Redis 7), which no other process
-- hears. With nobody in line, the lock is deleted. SPUBLISH is called
-- with pcall, so that a server without sharded pub/sub still releases.
--
-- KEYS: lock, waiters, fence counter. ARGV: token; and to hand the lock
-- on to a WaitRelease waiter, the reservation's prefix and TTL (ms).
-- Returns 0 if not held, 1 if released, 2 if released and a waiter woken
-- or granted the lock.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
if redis.call('LLEN', KEYS[2]) == 0 then
	redis.call('DEL', KEYS[1])
	return 1
end
--#include grant
local how, w = grant(KEYS[1], KEYS[2], KEYS[3], nil)
if not how then
	redis.call('DEL', KEYS[1])
	return 1
end
if how == 'g' then
	return 2
end
if ARGV[2] then
	redis.call('SET', KEYS[1], ARGV[2] .. w, 'PX', ARGV[3])
else
	redis.call('DEL', KEYS[1])
end
redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
return 2
