-- Lift: take the next value of a fence counter, raised first to at least
-- the server's clock in microseconds plus half of ARGV[2] (LiftAhead),
-- rounded up to a multiple of that half (so at most LiftAhead ahead), and
-- to ARGV[1], and return it. The
-- counter never goes down, so values stay unique and increasing; the
-- clock carries them over a counter that was lost or is behind (a
-- restart, a failover): see the package documentation on fencing.
--
-- Numbers stay below 2^53, where Lua's doubles are exact: the clock is
-- about 1.8e15, and RaiseFence refuses larger fences.
--
-- KEYS: counter. ARGV: minimum ("0" for none), lead (µs). Returns the value
-- and the server's clock (µs) as one string, "value clock": the store
-- keeps the clock to tell a counter behind it without asking (see
-- serverNow).
-- The lifted value is one above a multiple of half the lead, so that
-- servers whose counters advance in step (a MultiLocker's) and lift in
-- the same interval land on the same value, and their fences stay equal;
-- one above, so that a counter raised to that multiple (raise.lua) and
-- one below it lift to the same value too.
local c = redis.call('INCR', KEYS[1])
local t = redis.call('TIME')
local q = tonumber(ARGV[2]) / 2
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local m = math.max(math.ceil((now + q) / q) * q + 1, tonumber(ARGV[1]))
if c < m then
	redis.call('SET', KEYS[1], string.format('%.0f', m))
	c = m
end
return string.format('%.0f %.0f', c, now)
