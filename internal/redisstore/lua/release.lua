-- Release: if the lock holds the token, wake the first waiter in line and,
-- given a reservation's prefix, hand it the lock: pop the waiters' queue,
-- set the lock to the prefix followed by the popped subscription's id for
-- the reservation's TTL (only that subscription's processes can take it:
-- claim.lua), and announce the release on the shard channel of the popped
-- subscription (SPUBLISH, Redis 7), which no other process hears. Without
-- a prefix, or with nobody in line, the lock is deleted. SPUBLISH is
-- called with pcall, so that a server without sharded pub/sub still
-- releases.
--
-- KEYS: lock, waiters. ARGV: token; and to hand the lock on, the
-- reservation's prefix and TTL (ms).
-- Returns 0 if not held, 1 if released, 2 if released and a waiter woken.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
local w = redis.call('LPOP', KEYS[2])
if not w then
	redis.call('DEL', KEYS[1])
	return 1
end
if ARGV[2] then
	redis.call('SET', KEYS[1], ARGV[2] .. w, 'PX', ARGV[3])
else
	redis.call('DEL', KEYS[1])
end
redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
return 2
