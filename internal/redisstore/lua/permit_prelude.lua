-- The beginning of every permit script (see permit_acquire.lua for the
-- layout): the server's clock, t (TIME) and now (ms), and the expired
-- permits of KEYS[1] removed, so that what is left is held. A key of
-- another type is a WRONGTYPE error.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local pruned = redis.pcall('ZREMRANGEBYSCORE', KEYS[1], 0, '(' .. now)
if type(pruned) == 'table' and pruned.err then
	return redis.error_reply(pruned.err)
end
