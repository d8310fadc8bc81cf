-- Permits: count the unexpired permits of a resource, without writing.
--
-- KEYS: permits (see permit_acquire.lua). Returns the count.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = redis.pcall('ZCOUNT', KEYS[1], now, '+inf')
if type(n) == 'table' and n.err then
	return redis.error_reply(n.err)
end
return n
