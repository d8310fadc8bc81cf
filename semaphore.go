package lock

import (
	"context"
	"strconv"
	"time"
)

// Semaphore is a counting semaphore over a [Locker]: its Lock takes one of
// limit permits on a resource, so that at most limit holders hold the
// resource at once. *Semaphore implements Locker, so [Run], retry
// policies, hooks, Extend, Unlock, UnlockAll and Shutdown work as for
// locks; every permit has its own token. A Lock it returns names the
// resource as given and can be released by another process's Semaphore
// over the same stores and limit.
//
// Every caller of one semaphore must build it the same way (natively or
// from plain locks, see NewSemaphore: the two count permits apart, and
// neither sees the other's) and agree on its limit: a caller with
// another limit gets an error matching [ErrLimitMismatch] (and
// [ErrInvalid]: retrying does not help) while the permits taken under the
// first are held. See NewSemaphore for how far that is detected.
//
// Shutdown of a Semaphore releases its permits and refuses new ones; the
// locker it was built on stays in service. Shutdown of that locker shuts
// the semaphore down with it, however it was built: new permits are
// refused with [ErrClosed], a Lock waiting for one ends with ErrClosed —
// at once when that locker is a [*SingleLocker] or [*MultiLocker], at its
// next attempt (within its retry delay) when it is a Locker of another
// package, whose shutdown the semaphore cannot watch — and the permits
// held are released, ending first the contexts of the Runs that hold
// them. UnlockAll of that locker releases the semaphore's permits too.
//
// Make one with [NewSemaphore]: a zero Semaphore refuses every call with
// an error matching [ErrInvalid].
type Semaphore struct {
	impl  permitLocker
	limit int
}

// permitLocker is how a Semaphore is built: natively (a SingleLocker over
// the permits of a Permitter) or from plain locks on slot names.
type permitLocker interface {
	Locker
	engine
	argChecker
	permits(ctx context.Context, resource string) (int, error)
	validity(ttl time.Duration) time.Duration
	validityKnown() bool
	observer() observer
	delayBeyondTTL() time.Duration
	ttlGranularity() time.Duration
	shutGate() *gate
}

var _ Locker = (*Semaphore)(nil)

// NewSemaphore returns a semaphore over locker: its Lock takes one of
// limit permits on a resource. It returns an error matching ErrInvalid
// for a nil locker, a zero locker of this package (not made by its
// constructor), a locker that lets several holders in at once (see
// [Exclusive]: its locks would not bound the permits), a limit below 1,
// or, for a semaphore of plain locks (below), a limit above 1024.
//
// When locker is a [*SingleLocker] whose store is a [Permitter], permits
// are the store's own (one call per acquisition whatever the limit),
// taken with the locker's options: its tokens, retry policy, hook, store
// timeout and fencing. The store keeps a permit under its Lock's token
// prefixed with the limit, so that a semaphore of another limit finds it
// not held. Waiters wake on release if the store is a [PermitWaiter]. The
// store detects a limit mismatch whenever permits are held.
//
// Otherwise — any other store, a [MultiLocker] (Redlock), a Locker of
// another package — a permit is a plain lock, taken with locker.TryLock,
// on one of limit derived names (the resource, "~permit", and the slot
// number), starting at a random slot so that a free permit usually costs
// one attempt; an acquisition tries every slot once before it waits, as
// locker's retry policy says, for a release of any slot (on stores that
// can notify) or for the retry delay. The slot and the limit are part of
// the Lock's token. The derived names must be valid names of the stores,
// and must not be used for anything else. The limit is kept in a marker
// lock on a derived name (the resource and "~limit"), held under a token
// made from the limit: each acquisition, after taking its slot, takes
// the marker or, finding it held, extends it under its own limit's
// token, which succeeds only if the marker was taken under the same
// limit; otherwise it releases its slot, and the markers it took on
// other stores of a MultiLocker, and reports ErrLimitMismatch (and
// ErrUnavailable if the marker could not be checked on its store, or on
// a quorum of a MultiLocker's: a store that failed may hold another
// limit's marker); an
// attempt that finds every slot held checks the marker the same way
// (refreshing its own limit's, taking none). The marker lives for the
// TTL of the latest acquisition or extension of a permit, so a mismatch
// is detected while that lasts: not once every permit is released (until
// the marker's TTL runs out, a new limit is refused), nor when permits
// with longer TTLs outlive a marker last refreshed with a shorter one.
// It is not detected on stores that cannot extend locks ([Extender]),
// where a held marker is taken to agree, nor on lockers of other
// packages, whose stores the semaphore cannot reach; for a MultiLocker
// any store holding another limit's marker is a mismatch. The locker's
// hook sees the semaphore's calls under the resource's name (attempts,
// retries, the permit acquired, extended, released) and, within them,
// the calls on the slots under the derived names.
//
// Fences: with a Permitter, a permit's fence exceeds the fence of every
// permit granted earlier on the resource; with plain locks, it exceeds
// those of earlier holders of the same slot. Up to limit holders hold
// permits at once with different fences, so a fence does not make a
// holder with a lower fence stale as it does for a lock: guard a
// resource with a fence per slot, or with the check that fits it.
func NewSemaphore(locker Locker, limit int) (*Semaphore, error) {
	const op = "new"
	switch {
	case locker == nil || isNilPointer(locker):
		return nil, invalidf(op, "", "nil Locker")
	case unmade(locker) != "":
		return nil, invalidf(op, "", "the Locker is a zero %T, not made by %s", locker, unmade(locker))
	case limit < 1:
		return nil, invalidf(op, "", "semaphore limit is %d: want >= 1", limit)
	}
	if err := checkExclusive(op, "", locker); err != nil {
		return nil, err
	}
	if s, ok := locker.(*SingleLocker); ok {
		if p, ok := s.store.Store.(Permitter); ok {
			impl, err := newNativeSemaphore(s, p, limit)
			if err != nil {
				return nil, err
			}
			return &Semaphore{impl: impl, limit: limit}, nil
		}
	}
	if limit > maxSlots {
		return nil, invalidf(op, "", "semaphore limit is %d: a semaphore of plain locks has at most %d permits (a store that keeps permits, lock.Permitter, has no such bound)", limit, maxSlots)
	}
	return &Semaphore{impl: newSlotSemaphore(locker, limit), limit: limit}, nil
}

// maxSlots bounds the limit of a semaphore made of plain locks: an
// acquisition may try every slot.
const maxSlots = 1024

// checkResource and checkTTL check a resource and a ttl as the
// semaphore's Lock does (see argChecker); a zero Semaphore checks none.
func (s *Semaphore) checkResource(op, resource string) error {
	if s.impl == nil {
		return nil
	}
	return s.impl.checkResource(op, resource)
}

func (s *Semaphore) checkTTL(op, resource string, ttl time.Duration) error {
	if s.impl == nil {
		return nil
	}
	return s.impl.checkTTL(op, resource, ttl)
}

// Limit returns the semaphore's limit (0 for a nil or zero Semaphore).
func (s *Semaphore) Limit() int {
	if s == nil {
		return 0
	}
	return s.limit
}

// Lock implements [Locker]: it takes one permit on resource for ttl.
func (s *Semaphore) Lock(ctx context.Context, resource string, ttl time.Duration, opts ...LockOption) (Lock, error) {
	if s.impl == nil {
		return Lock{}, errNotMade("lock", resource)
	}
	return s.impl.Lock(ctx, resource, ttl, opts...)
}

// TryLock implements [Locker]: one attempt (one call with a Permitter;
// with plain locks, one try of each slot).
func (s *Semaphore) TryLock(ctx context.Context, resource string, ttl time.Duration) (Lock, error) {
	if s.impl == nil {
		return Lock{}, errNotMade("trylock", resource)
	}
	return s.impl.TryLock(ctx, resource, ttl)
}

// IsLocked implements [Locker]: it reports whether any permit on
// resource is held.
func (s *Semaphore) IsLocked(ctx context.Context, resource string) (bool, error) {
	if s.impl == nil {
		return false, errNotMade("islocked", resource)
	}
	return s.impl.IsLocked(ctx, resource)
}

// Unlock implements [Locker]: it releases the permit l. A Lock that is
// not one of the semaphore's permits (a plain lock, a permit of another
// resource or limit) is not held: the error matches [ErrNotHeld], however
// the semaphore was built. It is not [ErrInvalid], which reports bad input
// before anything is sent (a zero Lock, an empty resource or token): a
// store that keeps permits itself ([Permitter]) takes any token for a
// permit's, and only it can tell that none is held under it.
func (s *Semaphore) Unlock(ctx context.Context, l Lock) error {
	if s.impl == nil {
		return errNotMade("unlock", l.Resource)
	}
	return s.impl.Unlock(ctx, l)
}

// Extend implements [Locker]: it extends the permit l. A Lock that is not
// one of the semaphore's permits is not held, as for Unlock: the error
// matches [ErrNotHeld].
func (s *Semaphore) Extend(ctx context.Context, l Lock, ttl time.Duration) (Lock, error) {
	if s.impl == nil {
		return Lock{}, errNotMade("extend", l.Resource)
	}
	return s.impl.Extend(ctx, l, ttl)
}

// UnlockAll implements [Locker]: it releases every permit the semaphore
// took and still holds.
func (s *Semaphore) UnlockAll(ctx context.Context) error {
	if s.impl == nil {
		return errNotMade("unlockall", "")
	}
	return s.impl.UnlockAll(ctx)
}

// Shutdown implements [Locker]: the semaphore refuses new permits and
// releases those it holds. The locker it was built on stays in service.
func (s *Semaphore) Shutdown(ctx context.Context) error {
	if s.impl == nil {
		return errNotMade("shutdown", "")
	}
	return s.impl.Shutdown(ctx)
}

// Permits reports how many permits on resource are held now. With plain
// locks it asks about every slot, and over a MultiLocker it counts a slot
// that any store holds.
func (s *Semaphore) Permits(ctx context.Context, resource string) (held int, err error) {
	const op = "permits"
	if err := checkContext(ctx, op, resource); err != nil {
		return 0, err
	}
	if resource == "" {
		return 0, invalidf(op, resource, "empty resource name")
	}
	if s.impl == nil {
		return 0, errNotMade(op, resource)
	}
	return s.impl.permits(ctx, resource)
}

// validity, validityKnown and observer let Run account for the permit's
// validity and report a lost permit to the hook as it does for a lock;
// shutGate lets an Election's head start end with the semaphore's
// Shutdown.
func (s *Semaphore) validity(ttl time.Duration) time.Duration { return s.impl.validity(ttl) }
func (s *Semaphore) validityKnown() bool                      { return s.impl != nil && s.impl.validityKnown() }
func (s *Semaphore) observer() observer                       { return s.impl.observer() }
func (s *Semaphore) shutGate() *gate                          { return s.impl.shutGate() }

// wait waits, as the semaphore's Lock does between attempts, for a
// permit on resource to be freed.
func (s *Semaphore) wait(ctx context.Context, op, resource string, last *Error) bool {
	return s.impl.wait(ctx, op, resource, last)
}

// The derived names of a semaphore built from plain locks, and of a
// read-write lock's sides. They are the resource and a suffix that user
// names seldom end with.
const (
	slotSuffix   = "~permit"
	markerSuffix = "~limit"
)

func slotName(resource string, slot int) string {
	return resource + slotSuffix + strconv.Itoa(slot)
}

func markerName(resource string) string { return resource + markerSuffix }

// markerToken is the token of the limit marker of a semaphore of limit.
func markerToken(limit int) string { return "lockkit-semaphore-limit-" + strconv.Itoa(limit) }

// markOf implements stander for a semaphore of plain locks, whose permits
// stand for its slots' locks.
func (s *Semaphore) markOf(l Lock) (Locker, Lock, bool) {
	if d, ok := s.impl.(stander); ok {
		return d.markOf(l)
	}
	return nil, Lock{}, false
}

// delayBeyondTTL is how long the stores keep a permit beyond its TTL: the
// locker's Options.LockDelay.
func (s *Semaphore) delayBeyondTTL() time.Duration { return s.impl.delayBeyondTTL() }

// ttlGranularity is how much earlier than its TTL says a permit may
// expire: the largest TTL granularity among the stores (see Granular).
func (s *Semaphore) ttlGranularity() time.Duration { return s.impl.ttlGranularity() }
