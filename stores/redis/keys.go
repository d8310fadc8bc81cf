package redis

import (
	"github.com/lockkit/lock/internal/redisproto"
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
const MaxResourceLen = redisproto.MaxResourceLen

// The key layout is package redisproto's, shared with the go-redis store:
// for a resource r and the store's prefix p, the lock is p{e}, its fence
// counter p{e}:fence and its waiters' queue p{e}:waiters, where e is r
// with "%" and "}" percent-escaped, so every key of a lock has the hash
// tag e. The functions below bind it to the store's prefix.
const fenceSuffix = redisproto.FenceSuffix

// lockKey returns the key of resource's lock.
func (s *Store) lockKey(resource string) string { return redisproto.LockKey(s.prefix, resource) }

// keys returns the lock key and the fence key of resource.
func (s *Store) keys(resource string) (lockKey, fenceKey string) {
	return redisproto.LockAndFence(s.prefix, resource)
}

// lockAndWaiters returns the lock key and the waiters' queue key of
// resource.
func (s *Store) lockAndWaiters(resource string) (lockKey, waitersKey string) {
	return redisproto.LockAndWaiters(s.prefix, resource)
}

// waitersOf returns the waiters' queue key of a lock key.
func waitersOf(lockKey string) string { return redisproto.WaitersOf(lockKey) }

// ValidateResource implements [lock.ResourceValidator]: every non-empty
// name of at most MaxResourceLen bytes is accepted, whatever its bytes
// (braces, NUL, invalid UTF-8 included).
func (s *Store) ValidateResource(resource string) error {
	return redisproto.ValidateResource("redis", resource)
}
