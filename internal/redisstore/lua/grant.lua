-- Included by the scripts that free a lock with waiters in line (release,
-- pass, queue, force_release): grant(lock, waiters, counter, own) hands
-- the lock to the first waiter in line that can take it.
--
-- The waiters' queue holds two kinds of entry. A queued acquisition
-- (AcquireQueued) is "id:ttl:fenced:token": its subscription's id, the
-- TTL in ms, "1" if it takes a fence, and its token (last: a token may
-- hold any byte). It is granted the lock here: the lock is set to its
-- token for its TTL, its fence taken from the counter (lifted to the
-- server's clock when behind it, as lift.lua does, with LiftAhead: 50ms,
-- which scripts_test.go checks against the Go constant), and the grant
-- published on its subscription's channel as "fence:token" — unless no
-- client of this server listens on that channel (its process is gone, or
-- its subscription is on another node: a replica receives what its master
-- publishes, so the count SPUBLISH answers, this server's listeners, does
-- not tell), and then the next in line is tried. A bare subscription id is a waiter of
-- WaitRelease, which is only woken: the caller reserves the lock for it,
-- or deletes it, and publishes.
--
-- Returns nil if the queue is empty (nothing popped); "w" and the entry
-- if a WaitRelease waiter was popped; "g" and the entry if the lock was
-- granted to a queued acquisition; "o" and its fence ("0" if unfenced)
-- if the entry popped is own (the calling acquisition's, which needs no
-- message: the lock is set to its token).
local liftAhead = 50000

local function listening(ch)
	return redis.call('PUBSUB', 'SHARDNUMSUB', ch)[2] > 0
end

local function grant(lock, waiters, counter, own)
	while true do
		local w = redis.call('LPOP', waiters)
		if not w then
			return nil
		end
		local id, ttl, f, tok = string.match(w, '^([^:]*):(%d+):([01]):(.*)$')
		if not id then
			return 'w', w
		end
		local ch = waiters .. ':' .. id
		if w == own or listening(ch) then
			local fence = '0'
			if f == '1' then
				local c = redis.call('INCR', counter)
				local t = redis.call('TIME')
				local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
				if c < us then
					local q = liftAhead / 2
					c = math.ceil((us + q) / q) * q + 1 -- as in lift.lua
					redis.call('SET', counter, string.format('%.0f', c))
				end
				fence = string.format('%.0f', c)
			end
			redis.call('SET', lock, tok, 'PX', ttl)
			if w == own then
				return 'o', fence
			end
			redis.call('SPUBLISH', ch, fence .. ':' .. tok)
			return 'g', w
		end
	end
end
