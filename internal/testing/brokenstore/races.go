package brokenstore

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Stores that are wrong only when calls race, or that leave goroutines
// behind.

// ReleaseChecksThenDeletes releases in two steps, a check of the token
// and then, window later, an unconditional delete (GET, then DEL): a
// release at the moment the lock expires deletes the lock of the next
// owner if it took the resource in between.
func ReleaseChecksThenDeletes(window time.Duration) *Store {
	var h holders
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		tracked(mem, f, &h)
		f.Release = func(ctx context.Context, resource, token string) error {
			return checkThen(ctx, mem, &h, resource, token, window, func() { mem.Expire(resource) })
		}
	})
}

// FenceBeforeLock draws the fence before it takes the lock, not with it:
// two acquisitions can take their fences in one order and the lock in
// the other.
func FenceBeforeLock() *Store {
	return New(func(s *Store, mem *memory.Store, f *Funcs) {
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			fence := s.fences.Add(1)
			time.Sleep(rand.N(time.Millisecond))
			if err := mem.Acquire(ctx, resource, token, ttl); err != nil {
				return 0, err
			}
			return fence, nil
		}
	})
}

// LeaksGoroutine leaves a goroutine blocked for good behind every
// Release.
func LeaksGoroutine() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.Release = func(ctx context.Context, resource, token string) error {
			never := make(chan struct{})
			go func() { <-never }()
			return mem.Release(ctx, resource, token)
		}
	})
}

// ExtendChecksThenSets extends in two steps, a check of the token and
// then, window later, an unconditional new expiry (GET, then PEXPIRE): an
// extension at the moment the lock expires sets the TTL of the next
// owner's lock if it took the resource in between.
func ExtendChecksThenSets(window time.Duration) *Store {
	var h holders
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		tracked(mem, f, &h)
		f.Extend = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			return checkThen(ctx, mem, &h, resource, token, window, func() {
				_ = mem.Extend(ctx, resource, h.get(resource), ttl) // whoever holds it now
			})
		}
	})
}

// checkThen is a call made in two steps: a check that token holds
// resource (ErrNotHeld if not), then, window later, act, whoever holds
// resource by then.
func checkThen(ctx context.Context, mem *memory.Store, h *holders, resource, token string, window time.Duration, act func()) error {
	held, err := mem.Exists(ctx, resource)
	if err != nil {
		return err
	}
	if !held || h.get(resource) != token {
		return lock.ErrNotHeld
	}
	time.Sleep(window)
	act()
	return nil
}
