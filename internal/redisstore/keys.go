package redisstore

import (
	"fmt"
	"strings"

	"github.com/lockkit/lock"
)

// MaxResourceLen is the longest resource name, in bytes, that the stores
// accept; longer names are refused with an error wrapping
// lock.ErrInvalid, before anything is sent.
//
// Redis itself takes keys of up to 512 MB, but every operation sends the
// key (escaped, up to three times as long) and the server hashes and
// stores it: 4 KiB is far beyond any real name (a path, a URL, a composite
// ID) yet keeps every command within a few packets and a lock's memory
// small. A longer name is almost always a payload used by mistake.
const MaxResourceLen = 4096

// DefaultPrefix is the key prefix of a store made without a prefix option.
const DefaultPrefix = "lock:"

// The key layout. For a resource r and the store's prefix p:
//
//	p{e}                  the lock: its value is the owner's token (or a reservation: see ReservationPrefix), its TTL the lock's
//	p{e}:waiters          the subscriptions and queued acquisitions waiting for r, in line (see grant.lua)
//	p{e}:permits          r's permits, if any is held (see PermitsKey)
//	p{e}:permits:waiters  the subscriptions waiting for a permit, in line
//
// where e is r with "%" written as "%25" and "}" as "%7D". The escaping
// is injective and leaves no "}" in e, so the hash tag of every key is
// exactly e (the prefix has no braces: CheckPrefix): all keys of one lock
// are in one cluster slot, and distinct resources — "x" and "{x}", "}a{"
// and "a" — never share a key. Names without "%" or "}" are used as they
// are, so keys stay readable in redis-cli.
//
// A waiting subscription listens on the shard channel p{e}:waiters:<id>,
// named after the waiters' queue and its own id (see ChannelOf): it
// carries the lock's hash tag, so it lives on the lock's node.
//
// Fences come from one counter per server, FenceKey, or on a cluster one
// per hash slot, FenceKey followed by ":{t}" where t is a tag of that slot
// (see CounterKey): nothing of a resource stays once its lock is gone.
const WaitersSuffix = ":waiters" // ends the key of a resource's waiters' queue

// FenceKey is the key of a server's fence counter, outside every store's
// prefix like GuardKey: fences only need to increase, so stores of all
// prefixes share it.
const FenceKey = "lockkit:fence"

// queueMarginMs is how long, in milliseconds, the waiters' queue of a lock
// outlives the lock's TTL when nobody joins it (see Wait).
const queueMarginMs = 1000

// queueMargin is queueMarginMs as a script's argument.
var queueMargin = itoa(queueMarginMs)

// LockKey returns the key of resource's lock under prefix.
func LockKey(prefix, resource string) string {
	if !needsEscape(resource) {
		return prefix + "{" + resource + "}"
	}
	return prefix + "{" + escape(resource) + "}"
}

// LockAndWaiters returns the lock key and the waiters' queue key of
// resource, built as one string so that both cost one allocation.
func LockAndWaiters(prefix, resource string) (lockKey, waitersKey string) {
	e := resource
	if needsEscape(resource) {
		e = escape(resource)
	}
	key := prefix + "{" + e + "}" + WaitersSuffix
	return key[:len(key)-len(WaitersSuffix)], key
}

// WaitersOf returns the waiters' queue key of a lock key.
func WaitersOf(lockKey string) string { return lockKey + WaitersSuffix }

// ChannelOf returns the shard channel of the subscription id waiting for
// the lock at lockKey: the lock's waiters' queue key, a colon and the id —
// the channel the release script publishes on when it pops id. It carries
// the lock's hash tag, so it lives on the lock's cluster node. Each
// subscription has a channel of its own, so that a release wakes the one
// first in line and no other process hears of it.
func ChannelOf(lockKey, id string) string { return WaitersOf(lockKey) + ":" + id }

func needsEscape(r string) bool { return strings.ContainsAny(r, "%}") }

func escape(r string) string {
	var b strings.Builder
	b.Grow(len(r) + 8)
	for i := 0; i < len(r); i++ {
		switch c := r[i]; c {
		case '%':
			b.WriteString("%25")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ValidateResource accepts every non-empty name of at most MaxResourceLen
// bytes, whatever its bytes (braces, NUL, invalid UTF-8 included), and
// otherwise returns an error wrapping lock.ErrInvalid that says what is
// wrong; store names the store in it ("redis", "goredis").
func ValidateResource(store, resource string) error {
	switch {
	case resource == "":
		return fmt.Errorf("%w: empty resource name", lock.ErrInvalid)
	case len(resource) > MaxResourceLen:
		return fmt.Errorf("%w: resource name is %d bytes long; the %s store accepts at most %d (MaxResourceLen)", lock.ErrInvalid, len(resource), store, MaxResourceLen)
	}
	return nil
}

// CheckPrefix returns an error wrapping lock.ErrInvalid if prefix cannot
// be a key prefix: it may not contain "{" or "}", as the stores put their
// own hash tag after it, nor be FenceKey + ":", under which locks would
// be a cluster's fence counters (FenceKey + ":{t}"). option names the
// option in the error.
func CheckPrefix(option, prefix string) error {
	switch {
	case strings.ContainsAny(prefix, "{}"):
		return fmt.Errorf("%w: %s(%q): the prefix may not contain \"{\" or \"}\" (the store adds its own hash tag)", lock.ErrInvalid, option, prefix)
	case prefix == FenceKey+":":
		return fmt.Errorf("%w: %s(%q): the prefix of a cluster's fence counters (FenceKey)", lock.ErrInvalid, option, prefix)
	}
	return nil
}
