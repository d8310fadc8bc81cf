package lock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Store is the storage a locker takes locks in: a Redis server, a memcached
// server, memory. A Store makes one attempt per call and never retries;
// retries, validation and validity accounting are the lockers' job.
// Implementations must be safe for concurrent use.
//
// Every method must treat an outcome it cannot be sure of (a timeout after
// the request was sent, a connection reset) as an error of its own — the
// transport error, or the context's error — and never as ErrNotAcquired or
// ErrNotHeld: the lockers then clean up by token.
//
// Package conformance checks that a Store honours this contract.
type Store interface {
	// Acquire sets resource to token with the given time to live if, and
	// only if, the resource is free. If the resource is held by anyone — the
	// same token included, as locks are not re-entrant — it returns
	// ErrNotAcquired and changes nothing.
	Acquire(ctx context.Context, resource, token string, ttl time.Duration) error

	// Release frees resource if, and only if, it is held under token, as one
	// atomic compare-and-delete. Otherwise — free, expired, or held under
	// another token — it returns ErrNotHeld and changes nothing.
	Release(ctx context.Context, resource, token string) error

	// Exists reports whether anyone holds resource.
	Exists(ctx context.Context, resource string) (bool, error)
}

// The interfaces below are optional capabilities of a Store, discovered by
// type assertion in the manner of database/sql/driver. Each documents what
// the lockers do when a store lacks it.

// Extender is a Store that can extend a held lock.
//
// Extend sets the time to live of resource to ttl from now if, and only if,
// it is held under token, atomically. Otherwise it returns ErrNotHeld and
// changes nothing: an expired lock is never re-created.
//
// Fallback: without it, Locker.Extend returns an error matching
// [errors.ErrUnsupported], and [Run] cancels its function's context when
// the lock's validity runs out.
type Extender interface {
	Extend(ctx context.Context, resource, token string, ttl time.Duration) error
}

// TTLReader is a Store that can tell how long a held resource has left.
//
// TTL returns the remaining time to live of resource and true, or false if
// it is free.
//
// Fallback: the lockers do not need it; tools that show a lock's remaining
// time (lockctl status) report it as unknown.
type TTLReader interface {
	TTL(ctx context.Context, resource string) (remaining time.Duration, held bool, err error)
}

// Fencer is a Store that hands out fencing tokens.
//
// AcquireFenced behaves exactly as Acquire and, on success, also returns a
// fence: a number strictly greater than every fence this store returned
// earlier for the same resource, across releases and expiry, and never 0
// (0 is the Fence of a lock taken without fencing, which a [FenceGuard]
// refuses): a counter starts at 1. The fence and the lock are set
// atomically.
//
// Fallback: without it, Lock.Fence is 0.
type Fencer interface {
	AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (fence uint64, err error)
}

// Waiter is a Store that can wait for a held resource to become free, so
// contended callers wake up on release instead of polling.
//
// WaitRelease returns nil at once if resource is free, and otherwise blocks
// until it is released or expires, or until ctx ends (then it returns the
// context's error). It must not miss a release that happens after the call
// began. When several callers wait, a store may wake only one of them per
// release (handing over to the next caller in line), so waiters do not
// stampede; the lockers bound every wait by the TTL of the lock they ask
// for (or their retry delay, if longer).
//
// Fallback: without it, the lockers sleep the retry delay between attempts.
type Waiter interface {
	WaitRelease(ctx context.Context, resource string) error
}

// Queuer is a Store that keeps a line of waiting acquisitions per
// resource and hands a released lock to the first in line itself: the
// waiter holds the lock when it hears of the release, without asking
// again, and nobody who asks later can take it first.
//
// AcquireQueued acquires a.Resource under a.Token for a.TTL as Acquire
// does (as AcquireFenced does if a.Fenced, on a store that is also a
// [Fencer]) if the resource is free and nobody waits for it. Otherwise
// the call gets in line, calls a.Queued (if set), and waits, for up to
// a.Wait, for the lock to be handed to it — the store sets the resource
// to the token with the TTL counted from the handoff, which may come from
// a release or from the expiry of the lock held — and then returns as the
// acquisition would have. If a.Wait passes first, it leaves the line and
// returns ErrNotAcquired, unless the lock was handed to it meanwhile. If
// ctx ends first, it returns ctx's error, and the lock may have been
// handed to the token (an unknown outcome: the lockers release by token).
// If the store cannot queue acquisitions as configured, it returns an
// error matching [errors.ErrUnsupported] and sends nothing.
//
// A [SingleLocker] makes its Lock's attempts with it (TryLock keeps to
// Acquire), and tells its hook of a queued attempt as of an attempt that
// found the resource held followed by a wait and a new attempt: one
// that gets in line counts as two of [Retry.Attempts], so the last
// attempt a policy allows is made with Acquire. Its Wait is the lock's
// TTL (or the retry delay, if longer), and under a policy that retries
// [Forever] a day: such a Lock leaves the line when it is served, when
// its context ends, when Shutdown ends its wait or the store fails, or
// after a day (and then gets back in at the end), rather than getting
// back in at its end once per TTL. The
// lock's validity counts from when the call began; a wait long enough to
// cost more than an eighth of it is followed by an extension, where the
// store can extend.
//
// A type that embeds a store with AcquireQueued and overrides its
// acquisitions must override (or hide) AcquireQueued too, which takes
// locks with the embedded store's own commands.
//
// Fallback: without it (or when it reports errors.ErrUnsupported), Lock
// waits with [Waiter], or sleeps, between attempts.
type Queuer interface {
	AcquireQueued(ctx context.Context, a QueuedAcquisition) (fence uint64, err error)
}

// QueuedAcquisition is an acquisition made with [Queuer.AcquireQueued].
type QueuedAcquisition struct {
	Resource string
	Token    string
	TTL      time.Duration
	Fenced   bool          // take a fence, as AcquireFenced does
	Wait     time.Duration // the longest wait in line; 0 or less: one attempt, as Acquire
	// Queued, if not nil, is called once, on the caller's goroutine,
	// when the acquisition has found the resource held and gets in line.
	Queued func()
}

// Granular is a Store whose expiry is coarser than a millisecond, such as
// memcached with its whole seconds.
//
// TTLGranularity returns the amount by which a lock may expire earlier than
// its TTL says. The lockers subtract it from every lock's validity and
// refuse TTLs that leave no validity.
//
// Fallback: without it, the granularity is taken to be zero.
type Granular interface {
	TTLGranularity() time.Duration
}

// ResourceValidator is a Store that cannot represent every resource name as
// it is (too long, say). ValidateResource returns an error wrapping
// ErrInvalid that names what is wrong with resource.
//
// The lockers call it before sending anything to any store. Fallback:
// without it, every non-empty resource is accepted.
type ResourceValidator interface {
	ValidateResource(resource string) error
}

// FenceRaiser is a [Fencer] whose fences can be raised. A [MultiLocker]
// uses it to give a lock taken in several stores one fence that every
// later lock sees: it takes the largest fence its stores answered and
// raises the others to it. A store whose fences move only by its own
// acquisitions and raises (a counter, not a clock) lets stores that see
// the same acquisitions answer the same fences, so that the locker
// seldom needs a raise before it grants a lock.
//
// RaiseFence makes every fence that AcquireFenced hands out for resource
// from now on greater than fence; it changes nothing if they already are.
// It does not touch the lock itself. A store refuses a fence its counter
// could not go on increasing from (near 2^64, say) with an error matching
// ErrInvalid, and changes nothing.
//
// Fallback: without it, a MultiLocker's locks carry no fence (Fence 0).
type FenceRaiser interface {
	Fencer
	RaiseFence(ctx context.Context, resource string, fence uint64) error
}

// Permitter is a Store that keeps counted permits natively: at most limit
// tokens hold permits on a resource at once. Permits live in a namespace of
// their own: a permit on "r" and a lock on "r" do not exclude each other.
//
// Fallback: without it, a Semaphore takes one of limit plain locks on
// derived resource names (see NewSemaphore).
type Permitter interface {
	// AcquirePermit takes a permit on resource under token for ttl if fewer
	// than limit permits are held (expired ones do not count); otherwise it
	// returns ErrNotAcquired and changes nothing. If the permits held now were
	// taken under another limit, it returns an error wrapping
	// ErrLimitMismatch and changes nothing. fence is a number strictly greater
	// than every fence handed out earlier for a permit on resource when the
	// store fences (never 0: a counter starts at 1), else 0.
	AcquirePermit(ctx context.Context, resource, token string, limit int, ttl time.Duration) (fence uint64, err error)
	// ReleasePermit frees the permit held under token, or returns ErrNotHeld.
	ReleasePermit(ctx context.Context, resource, token string) error
	// ExtendPermit sets the permit's time to live to ttl from now if it is
	// still held under token, else ErrNotHeld; an expired permit is never
	// re-created.
	ExtendPermit(ctx context.Context, resource, token string, ttl time.Duration) error
	// Permits returns how many unexpired permits are held on resource.
	Permits(ctx context.Context, resource string) (held int, err error)
}

// PermitWaiter is a [Permitter] that can wait for a permit to be freed, so
// that a Semaphore's waiters wake up on release instead of polling.
//
// WaitPermit returns nil at once if a permit on resource is free, and
// otherwise blocks until one is released or expires, or until ctx ends
// (then it returns the context's error). It should wake one waiter per
// freed permit.
//
// Fallback: without it, a Semaphore sleeps its retry delay between
// attempts.
type PermitWaiter interface {
	WaitPermit(ctx context.Context, resource string) error
}

// Starter is a Store that can start a call without waiting for its
// answer, so that a [MultiLocker] asks all its stores at once without a
// goroutine per store per call: a store that pipelines requests (Redis)
// can send the calls of many callers together and answer them from one
// goroutine of its own.
//
// Start starts c and returns without waiting for the store; the store then
// calls done exactly once with the outcome — the fence and error that
// [Call.Run], with the same ctx, would have returned (the fence is 0 but
// for a successful CallAcquireFenced). done may run before Start returns,
// on the caller's goroutine, or later on any goroutine; it must not be
// expected to block, and it must run by ctx's deadline (a store may stop
// noticing ctx's cancellation once the call is on its way, but never its
// deadline). A call the store cannot make (CallExtend on a store that is
// not an [Extender], CallAcquireFenced on one that is not a [Fencer],
// CallRaiseFence on one that is not a [FenceRaiser]) is answered with an
// error matching [errors.ErrUnsupported].
//
// Fallback: without it, a MultiLocker runs each call in a goroutine of its
// own.
type Starter interface {
	Start(ctx context.Context, c Call, done func(fence uint64, err error))
}

// Call is a store call started with [Starter.Start].
type Call struct {
	Op       CallOp
	Resource string
	Token    string        // for every call but CallRaiseFence
	TTL      time.Duration // for CallAcquire, CallAcquireFenced and CallExtend
	Fence    uint64        // for CallRaiseFence
}

// CallOp says which store method a [Call] stands for.
type CallOp uint8

// The calls a Starter can start.
const (
	CallAcquire       CallOp = iota + 1 // Store.Acquire
	CallRelease                         // Store.Release
	CallExtend                          // Extender.Extend
	CallAcquireFenced                   // Fencer.AcquireFenced
	CallRaiseFence                      // FenceRaiser.RaiseFence
)

var callOpNames = [...]string{
	CallAcquire:       "acquire",
	CallRelease:       "release",
	CallExtend:        "extend",
	CallAcquireFenced: "acquire fenced",
	CallRaiseFence:    "raise fence",
}

// String returns the name of the store method in lower case, such as
// "acquire" or "raise fence".
func (o CallOp) String() string {
	if int(o) < len(callOpNames) && callOpNames[o] != "" {
		return callOpNames[o]
	}
	return "unknown"
}

// Run makes c on s with the blocking methods and returns the fence (for
// CallAcquireFenced) and error they return; a call s cannot make is
// answered with an error matching errors.ErrUnsupported. A Starter may use
// it for the calls it does not pipeline.
func (c Call) Run(ctx context.Context, s Store) (fence uint64, err error) {
	switch c.Op {
	case CallAcquire:
		return 0, s.Acquire(ctx, c.Resource, c.Token, c.TTL)
	case CallRelease:
		return 0, s.Release(ctx, c.Resource, c.Token)
	case CallExtend:
		if e, ok := s.(Extender); ok {
			return 0, e.Extend(ctx, c.Resource, c.Token, c.TTL)
		}
		return 0, fmt.Errorf("cannot extend locks: %w", errors.ErrUnsupported)
	case CallAcquireFenced:
		if f, ok := s.(Fencer); ok {
			return f.AcquireFenced(ctx, c.Resource, c.Token, c.TTL)
		}
		return 0, fmt.Errorf("cannot hand out fences: %w", errors.ErrUnsupported)
	case CallRaiseFence:
		if f, ok := s.(FenceRaiser); ok {
			return 0, f.RaiseFence(ctx, c.Resource, c.Fence)
		}
		return 0, fmt.Errorf("cannot raise fences: %w", errors.ErrUnsupported)
	}
	return 0, fmt.Errorf("%w: unknown call %d", ErrInvalid, c.Op)
}
