-- Raise: set a fence counter to ARGV[1] if it is below it (or missing), so
-- that every later fence is greater, and return the counter's value. No
-- increment and no clock: a MultiLocker raises the stores behind the
-- lock's fence to exactly that fence, so that their counters agree again
-- with the store that answered it and their next fences are equal. The
-- clock's lift is the acquisitions' business (lift.lua).
--
-- KEYS: counter. ARGV: fence (below 2^53: RaiseFence refuses more).
local v = redis.call('GET', KEYS[1])
local f = tonumber(ARGV[1])
if not v or tonumber(v) < f then
	redis.call('SET', KEYS[1], ARGV[1])
	return f
end
return tonumber(v)
