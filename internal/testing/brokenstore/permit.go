package brokenstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Stores whose permits (lock.Permitter) are broken. Each is a memory store
// with one permit method replaced; locks and the other permit methods are
// the memory store's.

// PermitStore is a memory store whose permit methods can be replaced one
// by one. A method whose replacement is nil is the memory store's.
type PermitStore struct {
	*memory.Store
	f PermitFuncs
}

// PermitFuncs are the replacements of a PermitStore's permit methods.
type PermitFuncs struct {
	AcquirePermit func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error)
	ReleasePermit func(ctx context.Context, resource, token string) error
	ExtendPermit  func(ctx context.Context, resource, token string, ttl time.Duration) error
	Permits       func(ctx context.Context, resource string) (int, error)
	WaitPermit    func(ctx context.Context, resource string) error
}

var (
	_ lock.Permitter    = (*PermitStore)(nil)
	_ lock.PermitWaiter = (*PermitStore)(nil)
)

// NewPermitStore returns a store over a new memory store with the permit
// methods in f replaced; build, if not nil, fills f with closures that
// need the memory store.
func NewPermitStore(build func(mem *memory.Store, f *PermitFuncs)) *PermitStore {
	s := &PermitStore{Store: memory.New()}
	if build != nil {
		build(s.Store, &s.f)
	}
	return s
}

// AcquirePermit implements lock.Permitter.
func (s *PermitStore) AcquirePermit(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
	if s.f.AcquirePermit != nil {
		return s.f.AcquirePermit(ctx, resource, token, limit, ttl)
	}
	return s.Store.AcquirePermit(ctx, resource, token, limit, ttl)
}

// ReleasePermit implements lock.Permitter.
func (s *PermitStore) ReleasePermit(ctx context.Context, resource, token string) error {
	if s.f.ReleasePermit != nil {
		return s.f.ReleasePermit(ctx, resource, token)
	}
	return s.Store.ReleasePermit(ctx, resource, token)
}

// ExtendPermit implements lock.Permitter.
func (s *PermitStore) ExtendPermit(ctx context.Context, resource, token string, ttl time.Duration) error {
	if s.f.ExtendPermit != nil {
		return s.f.ExtendPermit(ctx, resource, token, ttl)
	}
	return s.Store.ExtendPermit(ctx, resource, token, ttl)
}

// Permits implements lock.Permitter.
func (s *PermitStore) Permits(ctx context.Context, resource string) (int, error) {
	if s.f.Permits != nil {
		return s.f.Permits(ctx, resource)
	}
	return s.Store.Permits(ctx, resource)
}

// WaitPermit implements lock.PermitWaiter.
func (s *PermitStore) WaitPermit(ctx context.Context, resource string) error {
	if s.f.WaitPermit != nil {
		return s.f.WaitPermit(ctx, resource)
	}
	return s.Store.WaitPermit(ctx, resource)
}

// PermitsOverAdmit admits one holder more than the limit.
func PermitsOverAdmit() *PermitStore {
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
			return mem.AcquirePermit(ctx, resource, token, limit+1, ttl)
		}
	})
}

// PermitsExpireEarly keeps permits, whether AcquirePermit or
// ExtendPermit set their TTL, for share of it (0.5: half), as a store
// that sets a permit's expiry in the wrong unit, or from a stale clock,
// does, and declares no granularity: a semaphore of limit 1 admits a
// second holder while the first still counts on its place.
func PermitsExpireEarly(share float64) *PermitStore {
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		scale := func(ttl time.Duration) time.Duration { return time.Duration(share * float64(ttl)) }
		f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
			return mem.AcquirePermit(ctx, resource, token, limit, scale(ttl))
		}
		f.ExtendPermit = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			return mem.ExtendPermit(ctx, resource, token, scale(ttl))
		}
	})
}

// PermitReleaseWithoutTokenCheck frees some permit of the resource
// whatever the token.
func PermitReleaseWithoutTokenCheck() *PermitStore {
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		f.ReleasePermit = func(ctx context.Context, resource, token string) error {
			n, err := mem.Permits(ctx, resource)
			if err != nil || n == 0 {
				return errors.Join(err, lock.ErrNotHeld)
			}
			mem.ExpirePermits(resource) // the memory store frees them all: close enough to "any"
			return nil
		}
	})
}

// PermitsIgnoreLimitMismatch takes every permit under the limit its
// caller gives, whatever limit the permits held were taken under.
func PermitsIgnoreLimitMismatch() *PermitStore {
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
			fence, err := mem.AcquirePermit(ctx, resource, token, limit, ttl)
			if errors.Is(err, lock.ErrLimitMismatch) {
				return 0, nil // pretend: the caller believes it holds a permit
			}
			return fence, err
		}
	})
}

// PermitExtendRecreates re-creates an expired permit when its holder asks
// to extend it, under the limit it was taken with.
func PermitExtendRecreates() *PermitStore {
	var mu sync.Mutex
	limits := make(map[[2]string]int) // by resource and token
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
			mu.Lock()
			limits[[2]string{resource, token}] = limit
			mu.Unlock()
			return mem.AcquirePermit(ctx, resource, token, limit, ttl)
		}
		f.ExtendPermit = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			err := mem.ExtendPermit(ctx, resource, token, ttl)
			mu.Lock()
			limit, seen := limits[[2]string{resource, token}]
			mu.Unlock()
			if errors.Is(err, lock.ErrNotHeld) && seen {
				_, err = mem.AcquirePermit(ctx, resource, token, limit, ttl)
			}
			return err
		}
	})
}

// ExistsNeverHeld says every resource is free: a reader of a
// lock.RWLocker does not see the writer waiting for it to leave.
func ExistsNeverHeld() *Store {
	return New(func(_ *Store, _ *memory.Store, f *Funcs) {
		f.Exists = func(context.Context, string) (bool, error) { return false, nil }
	})
}

// PermitsNeverExpire keeps every permit for good.
func PermitsNeverExpire() *PermitStore {
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, _ time.Duration) (uint64, error) {
			return mem.AcquirePermit(ctx, resource, token, limit, 24*time.Hour)
		}
	})
}

// PermitReleaseIdempotent reports success for a second ReleasePermit of a
// permit it released, as a store that makes releases idempotent so that a
// retried one succeeds: the holder of a lost permit never learns it.
func PermitReleaseIdempotent() *PermitStore {
	var released sync.Map // of [2]string{resource, token}
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		f.ReleasePermit = func(ctx context.Context, resource, token string) error {
			err := mem.ReleasePermit(ctx, resource, token)
			key := [2]string{resource, token}
			if err == nil {
				released.Store(key, true)
			} else if _, again := released.Load(key); again && errors.Is(err, lock.ErrNotHeld) {
				return nil
			}
			return err
		}
	})
}

// PermitsShareLockNames keeps a resource's permits under the name of its
// lock, as a store that puts both under one key: a permit on a name a lock
// holds is refused.
func PermitsShareLockNames() *PermitStore {
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
			switch locked, err := mem.Exists(ctx, resource); {
			case err != nil:
				return 0, err
			case locked:
				return 0, lock.ErrNotAcquired
			}
			return mem.AcquirePermit(ctx, resource, token, limit, ttl)
		}
	})
}

// PermitFencesForgetEmpty keeps each resource's fence counter with its
// permits and drops it with the last of them, as a store that leaves
// nothing behind done wrong: once every permit is released or expired,
// fences start again from 1.
func PermitFencesForgetEmpty() *PermitStore {
	var mu sync.Mutex
	fences := make(map[string]uint64)
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
			mu.Lock()
			defer mu.Unlock()
			switch held, err := mem.Permits(ctx, resource); {
			case err != nil:
				return 0, err
			case held == 0:
				delete(fences, resource)
			}
			if _, err := mem.AcquirePermit(ctx, resource, token, limit, ttl); err != nil {
				return 0, err
			}
			fences[resource]++
			return fences[resource], nil
		}
	})
}

// PermitWaitWakesOnAnyRelease wakes every WaitPermit on any
// ReleasePermit, of whatever resource, as a store with one notification
// channel for all: every release is a stampede of waiters.
func PermitWaitWakesOnAnyRelease() *PermitStore {
	var mu sync.Mutex
	released := make(chan struct{})
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		f.ReleasePermit = func(ctx context.Context, resource, token string) error {
			err := mem.ReleasePermit(ctx, resource, token)
			mu.Lock()
			close(released)
			released = make(chan struct{})
			mu.Unlock()
			return err
		}
		f.WaitPermit = func(ctx context.Context, resource string) error {
			mu.Lock()
			next := released
			mu.Unlock()
			return closedOrDone(ctx, next)
		}
	})
}

// PermitWaitMissesRelease wakes a WaitPermit only when its context ends
// once every permit is held, as a store that forgot to notify on release:
// a waiting semaphore sleeps until its deadline.
func PermitWaitMissesRelease() *PermitStore {
	var l limits
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		l.track(mem, f)
		f.WaitPermit = func(ctx context.Context, resource string) error {
			held, err := mem.Permits(ctx, resource)
			if err != nil || held < max(l.get(resource), 1) {
				return err
			}
			<-ctx.Done()
			return ctx.Err()
		}
	})
}

// LocksUnseenBesidePermits keeps permits right, but its Exists never sees
// a held lock: a lock.RWLocker's readers, which look for a writer's intent
// (a plain lock) after taking their permits, keep entering while a writer
// waits, and the writer, which counts the readers' permits, waits on.
func LocksUnseenBesidePermits() lock.Store { return locksUnseen{NewPermitStore(nil)} }

type locksUnseen struct{ *PermitStore }

func (locksUnseen) Exists(context.Context, string) (bool, error) { return false, nil }

// PermitWaitBlocksWhilePartlyHeld makes a WaitPermit that begins while
// some permits of the resource are held, not all of them, wait for a
// release, as a store that waits whenever a permit is held does: a
// semaphore with a free place sleeps until someone leaves. With every
// permit held, or none, it waits as it should.
func PermitWaitBlocksWhilePartlyHeld() *PermitStore {
	return permitWaitOnRelease(func(ctx context.Context, mem *memory.Store, l *limits, n *notifier, resource string) error {
		held, err := mem.Permits(ctx, resource)
		if err != nil {
			return err
		}
		if held == 0 || held >= l.get(resource) {
			return mem.WaitPermit(ctx, resource)
		}
		return closedOrDone(ctx, n.next(resource))
	})
}

// PermitWaitIgnoresExpiry wakes a WaitPermit on a release of its
// resource only, as a store that notifies releases and forgets that
// permits expire: a waiting semaphore sleeps past a crashed holder's TTL.
func PermitWaitIgnoresExpiry() *PermitStore {
	return permitWaitOnRelease(func(ctx context.Context, mem *memory.Store, l *limits, n *notifier, resource string) error {
		ch := n.next(resource)
		limit := l.get(resource)
		if held, err := mem.Permits(ctx, resource); err != nil || held < max(limit, 1) {
			return err
		}
		return closedOrDone(ctx, ch)
	})
}

// permitWaitOnRelease returns a store whose WaitPermit is wait, given the
// limit each resource's permits were last taken under (l) and a notifier
// of each resource whose permit is released (n).
func permitWaitOnRelease(wait func(ctx context.Context, mem *memory.Store, l *limits, n *notifier, resource string) error) *PermitStore {
	var l limits
	var n notifier
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		l.track(mem, f)
		n.releasePermit(mem, f)
		f.WaitPermit = func(ctx context.Context, resource string) error {
			return wait(ctx, mem, &l, &n, resource)
		}
	})
}

// limits records the limit under which each resource's permits were
// last taken, for broken stores that need to know whether all are held.
type limits struct {
	mu sync.Mutex
	m  map[string]int
}

func (l *limits) get(resource string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[resource]
}

// track replaces f.AcquirePermit by the memory store's, recording the
// limit of each permit taken in l.
func (l *limits) track(mem *memory.Store, f *PermitFuncs) {
	f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
		fence, err := mem.AcquirePermit(ctx, resource, token, limit, ttl)
		if err == nil {
			l.mu.Lock()
			if l.m == nil {
				l.m = make(map[string]int)
			}
			l.m[resource] = limit
			l.mu.Unlock()
		}
		return fence, err
	}
}

// PermitDeadContextSucceeds answers ReleasePermit and ExtendPermit with
// success when their context has ended, without making them: a holder
// that asked to extend believes its permit renewed.
func PermitDeadContextSucceeds() *PermitStore {
	return NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		f.ReleasePermit = func(ctx context.Context, resource, token string) error {
			if ctx.Err() != nil {
				return nil
			}
			return mem.ReleasePermit(ctx, resource, token)
		}
		f.ExtendPermit = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			if ctx.Err() != nil {
				return nil
			}
			return mem.ExtendPermit(ctx, resource, token, ttl)
		}
	})
}

// PermitsSeenAsLocks keeps permits right, but its Exists reads a
// resource with permits held as locked, as a store that keeps locks and
// permits under one key and asks whether the key exists does.
func PermitsSeenAsLocks() lock.Store { return permitsSeen{NewPermitStore(nil)} }

type permitsSeen struct{ *PermitStore }

func (s permitsSeen) Exists(ctx context.Context, resource string) (bool, error) {
	held, err := s.PermitStore.Exists(ctx, resource)
	if err != nil || held {
		return held, err
	}
	n, err := s.Permits(ctx, resource)
	return n > 0, err
}
