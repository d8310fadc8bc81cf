package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// script is a Lua script run by its SHA-1 (EVALSHA), and sent in full
// (EVAL, which also loads it) when the server answers NOSCRIPT: after
// SCRIPT FLUSH, a restart or a failover to a node that never ran it. So
// NOSCRIPT never reaches the caller, and the usual cost is one EVALSHA.
type script struct {
	src   string
	sha   string
	nkeys int
	nargs int
}

func newScript(nkeys, nargs int, src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:]), nkeys: nkeys, nargs: nargs}
}

// acquireScript takes the lock if it is free and hands out a fence.
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
var acquireScript = newScript(2, 3, `
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

// releaseScript deletes the lock if it holds the token, and wakes the
// first waiter in line: it pops the waiters' queue (see waitScript) and
// announces the release on the shard channel of the popped subscription
// (SPUBLISH, Redis 7; see channelOf), which no other process hears.
// SPUBLISH is called with pcall, so that a server without sharded pub/sub
// still releases; its waiters then wake on expiry or on the lockers'
// retry delay.
//
// KEYS: lock, waiters. ARGV: token. Returns 0 if not held, 1 if released,
// 2 if released and a waiter was woken.
var releaseScript = newScript(2, 1, `
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

// waitScript puts a waiting subscription in line for the next release of
// a held lock, and returns the lock's PTTL: -2 (free: nothing queued), -1
// (no TTL) or the milliseconds left. The queue lives as long as the lock
// plus a margin, and is refreshed by every waiter that joins it, so that
// entries left by waiters that went away do not outlive the contention.
//
// KEYS: lock, waiters. ARGV: subscription id, queue margin (ms).
var waitScript = newScript(2, 2, `
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

// passScript hands a wake on: a subscription that was woken by a release
// but has no caller waiting any more wakes the next waiter in line, if
// the lock is still free.
//
// KEYS: lock, waiters. Returns 1 if it woke someone.
var passScript = newScript(2, 0, `
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

// leaveScript takes every entry of a subscription that is being dropped
// out of the waiters' queue.
//
// KEYS: waiters. ARGV: subscription id.
var leaveScript = newScript(1, 1, `
return redis.call('LREM', KEYS[1], 0, ARGV[1])
`)

// extendScript sets the lock's TTL if it holds the token. An expired lock
// reads as absent, so it is never re-created.
//
// KEYS: lock. ARGV: token, ttl (ms). Returns 1 if extended, 0 if not held.
var extendScript = newScript(1, 2, `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// cmd builds the command that runs sc: EVALSHA, or EVAL when full.
func (sc *script) cmd(b rueidis.Builder, full bool, keys *[2]string, args *[3]string) rueidis.Completed {
	numkeys := int64(sc.nkeys)
	if full {
		return b.Eval().Script(sc.src).Numkeys(numkeys).Key(keys[:sc.nkeys]...).Arg(args[:sc.nargs]...).Build()
	}
	return b.Evalsha().Sha1(sc.sha).Numkeys(numkeys).Key(keys[:sc.nkeys]...).Arg(args[:sc.nargs]...).Build()
}

// eval runs sc with up to two keys and three arguments (unused ones are
// ignored, as the script says how many it takes).
func (s *Store) eval(ctx context.Context, sc *script, k1, k2, a1, a2, a3 string) rueidis.RedisResult {
	keys, args := [2]string{k1, k2}, [3]string{a1, a2, a3}
	full := false
	build := func() rueidis.Completed { return sc.cmd(s.client.B(), full, &keys, &args) }
	r := s.do(ctx, build)
	if isNoScript(r.Error()) {
		full = true
		r = s.do(ctx, build)
	}
	return r
}

func isNoScript(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && e.IsNoScript()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// ttlArg is a TTL in milliseconds as a script argument.
type ttlArg struct {
	ttl time.Duration
	arg string
}

// ttlArg returns ttl in whole milliseconds as a string, remembering the
// last one: callers mostly use one TTL, so this saves an allocation per
// call.
func (s *Store) ttlArg(ttl time.Duration) string {
	if last := s.lastTTL.Load(); last != nil && last.ttl == ttl {
		return last.arg
	}
	a := &ttlArg{ttl: ttl, arg: itoa(millis(ttl))}
	s.lastTTL.Store(a)
	return a.arg
}
