package redisproto

import (
	"crypto/sha1"
	"encoding/hex"
)

// Script is a Lua script of the stores. The stores run it by its SHA-1
// (EVALSHA) and send it in full (EVAL, which also loads it) when the
// server answers NOSCRIPT: after SCRIPT FLUSH, a restart or a failover to
// a node that never ran it. So NOSCRIPT never reaches their callers, and
// the usual cost is one EVALSHA.
type Script struct {
	Src   string // the Lua source
	SHA   string // its SHA-1, in hex, for EVALSHA
	NKeys int    // how many KEYS it takes
	NArgs int    // how many ARGV it takes
}

func newScript(nkeys, nargs int, src string) Script {
	sum := sha1.Sum([]byte(src))
	return Script{Src: src, SHA: hex.EncodeToString(sum[:]), NKeys: nkeys, NArgs: nargs}
}

// Acquire takes the lock if it is free and hands out a fence.
//
// The fence is the next value of a per-resource counter, which is seeded
// from the server's clock in microseconds whenever it is missing: when
// first used, after it expired (its TTL, set when it is seeded, is the
// retention), and after a restart without persistence or a failover to a
// replica that missed it. Fences are thus strictly increasing while the
// counter lives, and still increasing when it is re-seeded, as the clock
// has moved on by more than the counter did: the counter grows by one per
// acquisition, and Redis cannot run an acquisition and a release of one
// resource per microsecond. That holds unless the server's clock goes
// back. The usual path is two commands: SET NX PX and INCR.
//
// A lock key that holds something other than a string was not written by
// a lock store: the script answers WRONGTYPE, an error, rather than
// passing it off as contention.
//
// KEYS: lock, fence. ARGV: token, ttl (ms), counter TTL (ms).
// Returns 0 if the resource is held, the fence otherwise.
var Acquire = newScript(2, 3, `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then
		return redis.error_reply('WRONGTYPE the lock key holds a value that is not a lock')
	end
	return 0
end
local fence = redis.call('INCR', KEYS[2])
if fence == 1 then
	local t = redis.call('TIME')
	fence = tonumber(t[1]) * 1000000 + tonumber(t[2])
	redis.call('SET', KEYS[2], string.format('%.0f', fence), 'PX', ARGV[3])
end
return fence
`)

// Release deletes the lock if it holds the token, and wakes the
// first waiter in line: it pops the waiters' queue (see Wait) and
// announces the release on the shard channel of the popped subscription
// (SPUBLISH, Redis 7; see ChannelOf), which no other process hears.
// SPUBLISH is called with pcall, so that a server without sharded pub/sub
// still releases; its waiters then wake on expiry or on the lockers'
// retry delay.
//
// KEYS: lock, waiters. ARGV: token. Returns 0 if not held, 1 if released,
// 2 if released and a waiter was woken.
var Release = newScript(2, 1, `
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
`)

// Wait puts a waiting subscription in line for the next release of
// a held lock, and returns the lock's PTTL: -2 (free: nothing queued), -1
// (no TTL) or the milliseconds left. The queue lives as long as the lock
// plus a margin, and is refreshed by every waiter that joins it, so that
// entries left by waiters that went away do not outlive the contention.
//
// KEYS: lock, waiters. ARGV: subscription id, queue margin (ms).
var Wait = newScript(2, 2, `
local ms = redis.call('PTTL', KEYS[1])
if ms == -2 then
	return -2
end
redis.call('RPUSH', KEYS[2], ARGV[1])
local ttl = tonumber(ARGV[2])
if ms > 0 then
	ttl = ttl + ms
end
redis.call('PEXPIRE', KEYS[2], ttl)
return ms
`)

// Pass hands a wake on: a subscription that was woken by a release
// but has no caller waiting any more wakes the next waiter in line, if
// the lock is still free.
//
// KEYS: lock, waiters. Returns 1 if it woke someone.
var Pass = newScript(2, 0, `
if redis.call('EXISTS', KEYS[1]) == 1 then
	return 0
end
local w = redis.call('LPOP', KEYS[2])
if not w then
	return 0
end
redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
return 1
`)

// Leave takes every entry of a subscription that is being dropped
// out of the waiters' queue.
//
// KEYS: waiters. ARGV: subscription id.
var Leave = newScript(1, 1, `
return redis.call('LREM', KEYS[1], 0, ARGV[1])
`)

// Extend sets the lock's TTL if it holds the token. An expired lock
// reads as absent, so it is never re-created.
//
// KEYS: lock. ARGV: token, ttl (ms). Returns 1 if extended, 0 if not held.
var Extend = newScript(1, 2, `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// Guarded is Acquire behind the restart guard (see GuardKey and the
// stores' WithRestartGuard).
//
// KEYS: lock, fence, marker. ARGV: token, ttl (ms), counter TTL (ms),
// maxTTL (ms), "1" to hand out a fence.
// Returns -ms while the server recovers (ms to wait, at least 1), 0 if the
// resource is held, and otherwise the fence (1 when not fenced).
var Guarded = newScript(3, 5, `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local since = redis.call('GET', KEYS[3])
if not since then
	redis.call('SET', KEYS[3], string.format('%.0f', now))
	return -tonumber(ARGV[4])
end
local left = tonumber(since) + tonumber(ARGV[4]) - now
if left > 0 then
	return -left
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then
		return redis.error_reply('WRONGTYPE the lock key holds a value that is not a lock')
	end
	return 0
end
if ARGV[5] ~= '1' then
	return 1
end
local fence = redis.call('INCR', KEYS[2])
if fence == 1 then
	fence = tonumber(t[1]) * 1000000 + tonumber(t[2])
	redis.call('SET', KEYS[2], string.format('%.0f', fence), 'PX', ARGV[3])
end
return fence
`)

// ForceRelease deletes the lock whoever holds it and, like the
// release script, wakes the first waiter in line on its own channel.
//
// KEYS: lock, waiters' queue. Returns 1 if a lock was deleted, 0 if the
// resource was free.
var ForceRelease = newScript(2, 0, `
if redis.call('DEL', KEYS[1]) == 0 then
	return 0
end
local w = redis.call('LPOP', KEYS[2])
if w then
	redis.pcall('SPUBLISH', KEYS[2] .. ':' .. w, '')
end
return 1
`)
