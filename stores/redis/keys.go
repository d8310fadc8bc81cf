package redis

import (
	"fmt"
	"strings"

	"github.com/lockkit/lock"
)

// MaxResourceLen is the longest resource name, in bytes, that the store
// accepts; longer names are refused with an error wrapping
// lock.ErrInvalid, before anything is sent.
//
// Redis itself takes keys of up to 512 MB, but every operation sends the
// key (escaped, up to three times as long) and the server hashes and
// stores it: 4 KiB is far beyond any real name (a path, a URL, a composite
// ID) yet keeps every command within a few packets and a lock's memory
// small. A longer name is almost always a payload used by mistake.
const MaxResourceLen = 4096

// The key layout. For a resource r and the store's prefix p:
//
//	p{e}          the lock: its value is the owner's token, its TTL the lock's
//	p{e}:fence    the last fence handed out for r
//	p{e}:waiters  the subscriptions waiting for r, in line (see WaitRelease)
//
// where e is r with "%" written as "%25" and "}" as "%7D". The escaping
// is injective and leaves no "}" in e, so the hash tag of every key is
// exactly e (the prefix has no braces, New checks): all keys of one lock
// are in one cluster slot, and distinct resources — "x" and "{x}", "}a{"
// and "a" — never share a key. Names without "%" or "}" are used as they
// are, so keys stay readable in redis-cli.
//
// A waiting subscription listens on the shard channel p{e}:waiters:<id>,
// named after the waiters' queue and its own id (see channelOf): it
// carries the lock's hash tag, so it lives on the lock's node (channels
// and keys are separate namespaces in Redis, and a shard channel hashes
// like a key).
const fenceSuffix = ":fence"

// lockKey returns the key of resource's lock.
func (s *Store) lockKey(resource string) string {
	if !needsEscape(resource) {
		return s.prefix + "{" + resource + "}"
	}
	return s.prefix + "{" + escape(resource) + "}"
}

// keys returns the lock key and the fence key of resource, built as one
// string so that a fenced acquisition costs one allocation for both.
func (s *Store) keys(resource string) (lockKey, fenceKey string) {
	e := resource
	if needsEscape(resource) {
		e = escape(resource)
	}
	fenceKey = s.prefix + "{" + e + "}" + fenceSuffix
	return fenceKey[:len(fenceKey)-len(fenceSuffix)], fenceKey
}

// waitersSuffix ends the key of a resource's waiters' queue.
const waitersSuffix = ":waiters"

// lockAndWaiters returns the lock key and the waiters' queue key of
// resource, built as one string.
func (s *Store) lockAndWaiters(resource string) (lockKey, waitersKey string) {
	e := resource
	if needsEscape(resource) {
		e = escape(resource)
	}
	waitersKey = s.prefix + "{" + e + "}" + waitersSuffix
	return waitersKey[:len(waitersKey)-len(waitersSuffix)], waitersKey
}

// waitersOf returns the waiters' queue key of a lock key.
func waitersOf(lockKey string) string { return lockKey + waitersSuffix }

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

// ValidateResource implements [lock.ResourceValidator]: every non-empty
// name of at most MaxResourceLen bytes is accepted, whatever its bytes
// (braces, NUL, invalid UTF-8 included).
func (s *Store) ValidateResource(resource string) error {
	switch {
	case resource == "":
		return fmt.Errorf("%w: empty resource name", lock.ErrInvalid)
	case len(resource) > MaxResourceLen:
		return fmt.Errorf("%w: resource name is %d bytes long; the redis store accepts at most %d (MaxResourceLen)", lock.ErrInvalid, len(resource), MaxResourceLen)
	}
	return nil
}
