--#include permit_prelude
-- WaitPermit: put a waiting subscription in line for the next release of
-- a permit when every permit is held, as wait.lua does for a lock, and
-- return how long until the first permit expires. The waiters' queue
-- lives as long as the last permit plus a margin, refreshed by every
-- waiter that joins it.
-- Runs after permit_prelude.lua (now; expired permits removed).
--
-- As in wait.lua: a waiter woken but beaten to the permit gets back in
-- line at the front (ARGV[3] = "1"); a free permit with subscriptions in
-- line is being handed to the first of them, so with ARGV[4] = "1" the
-- waiter gets in line behind them and the script returns -3 (look again
-- in a moment, with ARGV[4] = "0"); a caller that looks again keeps its
-- place, and a subscription's only caller takes the entries its earlier
-- callers left out of line first (ARGV[5], see wait.lua).
--
-- KEYS: permits (see permit_acquire.lua), waiters. ARGV: subscription id
-- ("" to look without getting in line), queue margin (ms), "1" to get in
-- line at the front, "1" to get in line behind a handoff, the number of
-- the subscription's callers waiting, "0" or "r".
-- Returns -2 if a permit is free (nothing queued), -3 if one is being
-- handed to a waiter ahead, otherwise the milliseconds until the first
-- permit expires.
local limit = redis.call('ZSCORE', KEYS[1], '')
local ms
if not limit or redis.call('ZCARD', KEYS[1]) - 1 < -tonumber(limit) then
	if ARGV[1] == '' or ARGV[4] ~= '1' or redis.call('LLEN', KEYS[2]) == 0 then
		return -2
	end
	ms = -3
else
	-- The permits by expiry: the limit first (scored below every
	-- expiry), then the first permit to expire.
	local first = redis.call('ZRANGE', KEYS[1], 1, 1, 'WITHSCORES')
	ms = tonumber(first[2]) - now
	if ARGV[1] == '' then
		return ms
	end
end
if ARGV[5] == 'r' then
	redis.call('LREM', KEYS[2], 0, ARGV[1])
end
if ARGV[3] == '1' then
	redis.call('LPUSH', KEYS[2], ARGV[1])
elseif ARGV[5] == '0' or ARGV[5] == 'r' or #redis.call('LPOS', KEYS[2], ARGV[1], 'COUNT', ARGV[5]) < tonumber(ARGV[5]) then
	redis.call('RPUSH', KEYS[2], ARGV[1])
end
local ttl = tonumber(ARGV[2])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[1] ~= nil and last[1] ~= '' then
	ttl = ttl + tonumber(last[2]) - now
end
redis.call('PEXPIRE', KEYS[2], ttl)
return ms
