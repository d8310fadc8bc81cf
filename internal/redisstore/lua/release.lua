-- Release: delete the lock if it holds the token, and wake the first
-- waiter in line: pop the waiters' queue and announce the release on the
-- shard channel of the popped subscription (SPUBLISH, Redis 7), which no
-- other process hears. SPUBLISH is called with pcall, so that a server
-- without sharded pub/sub still releases.
--
-- KEYS: lock, waiters. ARGV: token.
-- Returns 0 if not held, 1 if released, 2 if released and a waiter woken.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
local w = redis.call('LPOP', KEYS[2])
if w then
	redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
	return 2
end
return 1
