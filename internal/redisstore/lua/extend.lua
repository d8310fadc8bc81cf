-- Extend: set the lock's TTL if it holds the token. An expired lock reads
-- as absent, so it is never re-created.
--
-- KEYS: lock. ARGV: token, ttl (ms). Returns 1 if extended, 0 if not held.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
