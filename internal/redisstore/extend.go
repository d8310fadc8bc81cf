package redisstore

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/lockkit/lock"
)

// Extend implements [lock.Extender]: a compare-and-extend script, one
// round trip. It is idempotent, so a resent Extend is no ambiguity.
func (s *Store) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return err
	}
	return s.extended(ctx, s.eval(ctx, extendScript, []string{s.lockKey(resource)}, token, s.ttlArg(ttl)))
}

// extended returns the outcome of the extend script.
func (s *Store) extended(ctx context.Context, r Reply) error {
	switch {
	case r.Err != nil:
		return s.failed(ctx, r.Err)
	case r.Int == 0:
		return lock.ErrNotHeld
	}
	return nil
}

// TTL implements [lock.TTLReader] with PTTL (millisecond precision), in
// a script that checks the key's type first (ttl.lua): a key of another
// type is a WRONGTYPE error, as in Acquire and Holder, not a lock held.
func (s *Store) TTL(ctx context.Context, resource string) (time.Duration, bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return 0, false, err
	}
	key := s.lockKey(resource)
	r := s.eval(ctx, ttlScript, []string{key})
	switch {
	case r.serverErr("WRONGTYPE"):
		return 0, false, s.wrongType(key)
	case r.Err != nil:
		return 0, false, s.failed(ctx, r.Err)
	case r.Int == -2:
		return 0, false, nil
	case r.Int < 0:
		return 0, false, fmt.Errorf("%s: key %q has no TTL: it is not a lock of this store", s.kind, key)
	}
	if r.Int > int64(math.MaxInt64/time.Millisecond) {
		return math.MaxInt64, true, nil // a "forever" TTL: no Duration holds its whole ms
	}
	return time.Duration(r.Int) * time.Millisecond, true, nil
}

// ForceRelease frees resource's lock whoever holds it, and wakes the
// first caller in line as Release does: a queued acquisition gets the
// lock; a WaitRelease waiter is woken, but the lock is deleted, not
// reserved for it. It reports whether the resource was held. It is
// meant for administrative tools (lockctl release --force), for a lock
// whose owner is known to be gone.
//
// The owner is not told: it finds out at its next Extend or Release, which
// report lock.ErrNotHeld (lock.Run then cancels its function's context
// with lock.ErrLost), and until then it may go on as if it held the lock
// while another owner takes it. Fences are kept: later ones still
// increase. A key of another type is a WRONGTYPE error, as in Acquire,
// and is left alone; so is a waiters' queue key (the lock key and
// WaitersSuffix) of another type than a list, whose error names that key,
// and the lock is then left to its holder.
func (s *Store) ForceRelease(ctx context.Context, resource string) (bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return false, err
	}
	lockKey, waitersKey := LockAndWaiters(s.prefix, resource)
	r := s.eval(ctx, forceReleaseScript, []string{lockKey, waitersKey, s.counterKey(lockKey)})
	switch {
	case r.serverErr(waitersWrongType):
		return false, fmt.Errorf("%s: WRONGTYPE: waiters' key %q holds a value that is not a queue of waiters", s.kind, waitersKey)
	case r.serverErr("WRONGTYPE"):
		return false, s.wrongType(lockKey)
	case r.Err != nil:
		return false, s.failed(ctx, r.Err)
	}
	return r.Int == 1, nil
}

// waitersWrongType begins the error force_release.lua answers when the
// waiters' queue key holds a value of another type.
const waitersWrongType = "WRONGTYPE the waiters key"
