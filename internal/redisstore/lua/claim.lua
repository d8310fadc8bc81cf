-- Claim: SET NX PX GET for a process whose subscription a release woke:
-- the lock is also taken if it is reserved for that subscription (see
-- release.lua). Answers as SET NX PX GET does: nil if taken, else the
-- value the lock holds (a key of another type is a WRONGTYPE error).
--
-- KEYS: lock. ARGV: token, ttl (ms), the subscription's reservation.
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[3] then
	return v
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
