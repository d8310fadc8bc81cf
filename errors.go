package lock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors. Every error returned by a [Locker] can be matched against
// them with [errors.Is], except two kinds: errors caused by the caller's
// context match [context.Canceled] or [context.DeadlineExceeded] (and never
// ErrNotAcquired, so cancellation is always distinguishable from
// contention), and a call that the stores lack the capability for (Extend
// without [Extender], Holder without [HolderReader]) matches
// [errors.ErrUnsupported].
var (
	// ErrNotAcquired reports that the resource is held by another owner:
	// every attempt allowed by the retry policy found it taken.
	// Locks are not re-entrant: a resource held under the caller's own token
	// is taken too.
	ErrNotAcquired = errors.New("lock: not acquired: held by another owner")

	// ErrNotHeld reports an Unlock or Extend of a lock that is no longer held
	// under its token: it expired, or it expired and another owner took it.
	// The caller's critical section outlived its lock.
	ErrNotHeld = errors.New("lock: not held: expired or taken over")

	// ErrUnavailable reports that stores failed (connection errors, timeouts,
	// late answers), so the operation could not be completed. The outcome on
	// the failing stores is unknown; the lockers have already asked them to
	// release whatever they may hold. [Error.Stores] says which stores failed
	// and why, and the stores' own errors are part of the chain.
	ErrUnavailable = errors.New("lock: stores unavailable")

	// ErrInvalid reports bad input: an empty resource, a non-positive TTL, a
	// zero Lock, a nil store, an invalid option. Nothing was sent to any
	// store, unless a store refused the request itself (a TTL under etcd's
	// minimum, say), which it would refuse again: the store's error is in
	// the chain.
	ErrInvalid = errors.New("lock: invalid argument")

	// ErrClosed reports a call on a locker after Shutdown. A store's own
	// error that wraps ErrClosed (its client closed, say) is a store
	// failure: the call reports ErrUnavailable, and Lock retries it.
	ErrClosed = errors.New("lock: locker is shut down")

	// ErrLost is the cause (see [context.Cause]) with which [Run] cancels
	// its function's context when the lock can no longer be kept: an
	// extension reported it not held, or extensions failed until its
	// validity ran out. Run's error matches it whenever the lock was lost
	// while the function ran, also when the function's context had ended
	// already (ctx canceled, the extensions stopped, and the function
	// outlived the lock's validity).
	ErrLost = errors.New("lock: lost")

	// ErrMaxHold is the cause with which [Run] cancels its function's
	// context when the maximum hold time set with [MaxHold] is reached.
	ErrMaxHold = errors.New("lock: maximum hold time reached")

	// ErrLimitMismatch reports that two callers disagree on a semaphore's
	// limit: permits on the resource are held under another limit.
	ErrLimitMismatch = errors.New("lock: semaphore limit mismatch")

	// ErrStaleFence reports a write refused by a [FenceGuard]: its fence
	// is lower than that of a write the guard let through, so the writer's
	// lock had expired and been taken by another since.
	ErrStaleFence = errors.New("lock: stale fence")
)

// Error is the error type returned by the lockers. It names the operation
// and the resource, carries the cause in Err and, for operations that
// involve stores, the stores that did not succeed and why: for a
// MultiLocker, every store that had answered otherwise than with success
// when the outcome was decided; for a SingleLocker, its store when it
// failed or refused the request, not when it answered "held by another"
// or "not held" (Err says so).
//
// Error unwraps to Err and to the stores' errors that are not lock outcomes
// (a store answering "held by another" or "not held" is not part of the
// chain), and only Err matches the outcome sentinels and the context
// errors (see [Error.Unwrap]): errors.Is(err, ErrNotAcquired),
// errors.Is(err, ErrUnavailable) and errors.Is(err, context.Canceled)
// reflect the overall outcome, and at most one of them holds.
type Error struct {
	Op       string       // "lock", "trylock", "unlock", "extend", "islocked", "holder", "permits", "unlockall", "shutdown", "run", "runonce", "new", "election", "campaign", "lead", "leader", "resign"
	Resource string       // the resource, if any
	Err      error        // the overall cause: a sentinel of this package, a context error, or a validation error
	Stores   []StoreError // stores that did not succeed, in store order
}

// StoreError is the outcome of one store that did not succeed.
type StoreError struct {
	Index int    // position of the store in the locker's store list
	Store string // the store's name: its String method, or else "store (type)", "store[index] (type)" among several stores
	Err   error  // what the store returned
}

// Error implements error.
func (e StoreError) Error() string { return e.Store + ": " + trimPrefix(e.Err) }

// Unwrap returns the store's error.
func (e StoreError) Unwrap() error { return e.Err }

// Error implements error. It reads `op "resource": cause [store: error;
// ...]`, such as `trylock "report": not acquired: held by another owner`.
func (e *Error) Error() string {
	op := e.Op
	if op == "new" {
		op = "new locker"
	}
	if e.Resource != "" {
		op += " " + strconv.Quote(e.Resource)
	}
	return op + e.tail()
}

// tail renders the cause and the stores' errors, after the operation.
func (e *Error) tail() string {
	var b strings.Builder
	b.WriteString(": ")
	b.WriteString(trimPrefix(e.Err))
	for i, s := range e.Stores {
		if i == 0 {
			b.WriteString(" [")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(s.Error())
		if i == len(e.Stores)-1 {
			b.WriteString("]")
		}
	}
	return b.String()
}

// detail renders err inside another error's message, which names the
// resource already: an *Error without its resource, others without the
// package prefix.
func detail(err error) string {
	if e, ok := err.(*Error); ok {
		return e.Op + e.tail()
	}
	return trimPrefix(err)
}

// Unwrap returns Err followed by the stores' errors that are failures
// rather than lock outcomes. A store's error matches, in the chain, what
// it matches alone except the outcomes (ErrNotAcquired, ErrNotHeld,
// ErrUnavailable, ErrClosed, ErrLost, ErrMaxHold) and the context errors,
// which only Err matches: a client's own timeout wrapping
// context.DeadlineExceeded, or a store's error wrapping ErrUnavailable
// under an overall ErrNotAcquired, does not make the call read as another
// outcome.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 1+len(e.Stores))
	errs = append(errs, e.Err)
	for _, s := range e.Stores {
		if !isOutcome(s.Err) {
			errs = append(errs, screened{s})
		}
	}
	return errs
}

// screened is a store's failure in an Error's chain: see Error.Unwrap.
// errors.As still finds the StoreError and anything in its chain.
type screened struct{ s StoreError }

func (e screened) Error() string { return e.s.Error() }

// Is reports whether the store's error matches target, unless target is
// an outcome or a context error.
func (e screened) Is(target error) bool {
	return !isOutcomeSentinel(target) && errors.Is(e.s.Err, target)
}

// As finds target in the StoreError's chain.
func (e screened) As(target any) bool { return errors.As(e.s, target) }

// isOutcomeSentinel reports whether target is one of the errors that only
// an Error's Err matches: the outcomes and the context errors.
func isOutcomeSentinel(target error) bool {
	switch target {
	case ErrNotAcquired, ErrNotHeld, ErrUnavailable, ErrClosed, ErrLost, ErrMaxHold,
		context.Canceled, context.DeadlineExceeded:
		return true
	}
	return false
}

// foreign is an error from outside the lockers and their stores inside an
// Error's Err: a context's cause (context.Cause), a TokenGenerator's
// error. It matches what it matches alone except this package's sentinels
// and the context errors, so that it cannot make a call read as another
// outcome: a context canceled with another call's ErrNotAcquired as its
// cause (as errgroup does) ends a Lock with an error that matches
// context.Canceled and not ErrNotAcquired. errors.As still finds anything
// in its chain.
type foreign struct{ err error }

func (e foreign) Error() string { return e.err.Error() }

// Is reports whether the error matches target, unless target is a
// sentinel of this package or a context error.
func (e foreign) Is(target error) bool {
	switch target {
	case ErrInvalid, ErrLimitMismatch, ErrStaleFence, ErrResigned, errors.ErrUnsupported:
		return false
	}
	return !isOutcomeSentinel(target) && errors.Is(e.err, target)
}

// As finds target in the error's chain.
func (e foreign) As(target any) bool { return errors.As(e.err, target) }

// shutDown reports whether err is a locker's own ErrClosed, as opposed to
// a store error that wraps ErrClosed (a failure like any other).
func shutDown(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Err == ErrClosed
}

// isOutcome reports whether a store error is a lock outcome, as opposed to
// a failure of the store.
func isOutcome(err error) bool {
	return errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrNotHeld)
}

// trimPrefix renders err without the package prefix, so that wrapped
// sentinels do not repeat "lock: ".
func trimPrefix(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.TrimPrefix(err.Error(), "lock: ")
}

// invalidf returns a validation error for op on resource.
func invalidf(op, resource, format string, args ...any) error {
	return &Error{Op: op, Resource: resource, Err: fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)}
}

// timeoutError is what a store attempt becomes when the per-store timeout,
// not the caller's context, ended it. It deliberately does not wrap
// context.DeadlineExceeded: the caller's context is still alive.
type timeoutError struct{ after string }

func (e timeoutError) Error() string { return "no answer within " + e.after }
