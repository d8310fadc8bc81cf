package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockkit/lock/internal/inproc"
)

// SingleLocker takes locks in one store. Its guarantees are the store's:
// with a single Redis node, mutual exclusion holds while that node lives
// and keeps its data. Make one with [NewSingle]: a zero SingleLocker
// refuses every call with an error matching [ErrInvalid].
type SingleLocker struct {
	core
	store storeRef
	opts  Options // as given to NewSingle: a Semaphore builds its permit locker with them
}

var _ Locker = (*SingleLocker)(nil)

// NewSingle returns a locker over store. A nil opts gives the defaults;
// Options.Quorum must be nil.
func NewSingle(store Store, opts *Options) (*SingleLocker, error) {
	const op = "new"
	s := &SingleLocker{}
	if err := s.init(op, opts, s); err != nil {
		return nil, err
	}
	if opts != nil && opts.Quorum != nil {
		return nil, invalidf(op, "", "Options.Quorum applies to NewMulti only")
	}
	refs, err := s.resolve(op, []Store{store}, opts)
	if err != nil {
		return nil, err
	}
	s.store = refs[0]
	if s.store.ext == nil {
		s.unextendable = func(op, resource string) error {
			return &Error{Op: op, Resource: resource, Err: fmt.Errorf("%s cannot extend locks: %w", s.store.name, errors.ErrUnsupported)}
		}
	}
	if s.local = inproc.Of(store); s.local != nil {
		s.owner = owners.Add(1)
	}
	if s.store.queuer != nil && !s.fixedTokens {
		s.queuer = s // a fixed token would name two callers in one line
		s.canWait = true
	}
	if opts != nil {
		s.opts = *opts
	}
	return s, nil
}

// wait implements engine: it waits on the store, if it can notify.
func (s *SingleLocker) wait(ctx context.Context, op, resource string, _ *Error) bool {
	if s.store.waiter == nil {
		return false
	}
	t0 := s.obs.start()
	err := s.store.waiter.WaitRelease(ctx, resource)
	s.obs.storeCall(ctx, op, resource, &s.store, "wait", t0, err)
	return err == nil
}

// attempt implements engine.
func (s *SingleLocker) attempt(ctx context.Context, op, resource string, ttl time.Duration) (Lock, inproc.Instant, time.Duration, *Error) {
	if err := ctx.Err(); err != nil {
		return Lock{}, 0, 0, &Error{Err: ctxErr(ctx)}
	}
	token, e := s.token()
	if e != nil {
		return Lock{}, 0, 0, e
	}
	// The lock's validity counts from start, and the store answered
	// elapsed after it. A store in the process reports both from its own
	// clock reading, and records the lock as this locker's
	// (inproc.Store): the locker then reads no clock, not even for a
	// hook's durations, and keeps no record of its own.
	var began inproc.Instant // when the attempt began: read for a hook only
	if s.local == nil {
		began = s.obs.start()
	}
	var start inproc.Instant
	var elapsed time.Duration
	var fence uint64
	var err error
	if s.local != nil {
		fence, start, elapsed, err = s.local.AcquireStamped(ctx, s.owner, resource, token, s.storeTTL(ttl))
		if s.store.fencer == nil {
			fence = 0 // Options.NoFence
		}
	} else {
		if start = began; start.IsZero() {
			start = inproc.Now()
		}
		fence, err = acquireOn(ctx, s.store, resource, token, s.storeTTL(ttl))
		elapsed = inproc.Since(start)
	}
	took := elapsed // how long the attempt took from began
	if began.IsZero() {
		began = start // zero if the store failed before it read its clock
	} else {
		took = answeredAfter(began, start, elapsed)
	}
	s.obs.storeCallTook(ctx, op, resource, &s.store, "acquire", took, err)
	switch {
	case err != nil:
		return Lock{}, began, took, s.failed(ctx, op, resource, token, err)
	case elapsed >= s.validity(ttl):
		return Lock{}, began, took, s.unknown(ctx, op, resource, token, pastValidity("answered", elapsed))
	}
	l := Lock{Resource: resource, Token: token, ValidUntil: s.validUntil(start, ttl), Fence: fence}
	if s.local == nil {
		s.held.put(l, s.heldBeyond(elapsed, ttl))
	}
	return l, began, took, nil
}

// queued implements queuer: one AcquireQueued. The lock's validity counts
// from when the call began; a lock handed over after a wait in line that
// cost more than an eighth of it is extended (where the store can extend),
// and the validity then counts from the extension. One taken without a
// wait is refused past its validity, as attempt refuses it. Shutdown ends
// the wait.
func (s *SingleLocker) queued(ctx context.Context, op, resource string, ttl, wait time.Duration, attempt int) (Lock, inproc.Instant, time.Duration, bool, *Error) {
	if err := ctx.Err(); err != nil {
		return Lock{}, 0, 0, false, &Error{Err: ctxErr(ctx)}
	}
	token, e := s.token()
	if e != nil {
		return Lock{}, 0, 0, false, e
	}
	qctx, cancel := context.WithCancel(ctx)
	stop := s.gate.afterShut(cancel)
	start := inproc.Now()
	called := start // when the store call the hook sees began
	inLine := false
	fence, err := s.store.queuer.AcquireQueued(qctx, QueuedAcquisition{
		Resource: resource, Token: token, TTL: s.storeTTL(ttl), Fenced: s.store.fencer != nil, Wait: wait,
		Queued: func() {
			// Told as an attempt that found the resource held, a wait in
			// line, and the next attempt.
			inLine = true
			if s.obs.on() {
				now := inproc.Now()
				s.obs.storeCallTook(ctx, op, resource, &s.store, "acquire", now.Sub(called), ErrNotAcquired)
				s.obs.emit(ctx, Event{Kind: EventRetry, Op: op, Resource: resource, Attempt: attempt, Delay: wait, Waiting: true, Err: ErrNotAcquired})
				s.obs.emit(ctx, Event{Kind: EventAttempt, Op: op, Resource: resource, Attempt: attempt + 1})
				called = now
			}
		},
	})
	elapsed := inproc.Since(start)
	// The hook hears of the store's answer in the context that ended the
	// call: a wait that Shutdown ended is no store's failure.
	hctx, serr := ctx, err
	if err != nil && qctx.Err() != nil && ctx.Err() == nil {
		hctx = qctx
		err = fmt.Errorf("%w: %w", errShutWait, err)
	}
	stop()
	cancel()
	if errors.Is(err, errors.ErrUnsupported) {
		// Nothing was sent: attempt, and wait, as without the capability,
		// from now on.
		s.noQueue.Store(true)
		l, start, took, e := s.attempt(ctx, op, resource, ttl)
		return l, start, took, false, e
	}
	if s.obs.on() {
		s.obs.storeCallTook(hctx, op, resource, &s.store, "acquire", inproc.Since(called), serr)
	}
	if err != nil {
		return Lock{}, start, elapsed, inLine, s.failed(ctx, op, resource, token, err)
	}
	valid := start // the validity counts from here
	switch validity := s.validity(ttl); {
	case !inLine && elapsed >= validity:
		// Taken without a wait, as attempt takes it, and as late.
		return Lock{}, start, elapsed, inLine, s.unknown(ctx, op, resource, token, pastValidity("answered", elapsed))
	case inLine && elapsed > validity/8 && s.store.ext != nil:
		// Handed over after a wait: renewed, unless the wait was short.
		if valid, elapsed, e = s.renew(ctx, op, resource, token, ttl); e != nil {
			return Lock{}, start, inproc.Since(start), inLine, e
		}
	case inLine && elapsed >= validity:
		return Lock{}, start, elapsed, inLine, s.unknown(ctx, op, resource, token, pastValidity("handed over", elapsed))
	}
	l := Lock{Resource: resource, Token: token, ValidUntil: s.validUntil(valid, ttl), Fence: fence}
	s.held.put(l, s.heldBeyond(elapsed, ttl))
	return l, start, inproc.Since(start), inLine, nil
}

// renew extends a lock just handed to token after a wait that cost it much
// of its validity, and returns when the extension began and how long it
// took. A lock the store no longer holds is ErrNotAcquired; on any other
// failure the lock is released.
func (s *SingleLocker) renew(ctx context.Context, op, resource, token string, ttl time.Duration) (inproc.Instant, time.Duration, *Error) {
	start := inproc.Now()
	err := s.store.ext.Extend(ctx, resource, token, s.storeTTL(ttl))
	elapsed := inproc.Since(start)
	s.obs.storeCallTook(ctx, op, resource, &s.store, "extend", elapsed, err)
	switch {
	case err == nil && elapsed < s.validity(ttl):
		return start, elapsed, nil
	case errors.Is(err, ErrNotHeld):
		return start, elapsed, &Error{Err: ErrNotAcquired}
	case err == nil:
		err = pastValidity("extended", elapsed)
	}
	return start, elapsed, s.unknown(ctx, op, resource, token, err)
}

// failed returns the caller's error for an acquisition of token that
// failed with err: a refusal, or an unknown outcome (see unknown).
func (s *SingleLocker) failed(ctx context.Context, op, resource, token string, err error) *Error {
	switch {
	case errors.Is(err, ErrNotAcquired):
		return &Error{Err: ErrNotAcquired}
	case errors.Is(err, ErrInvalid):
		// The store refused the request before running it: final.
		return &Error{Err: ErrInvalid, Stores: []StoreError{{Index: 0, Store: s.store.name, Err: err}}}
	}
	return s.unknown(ctx, op, resource, token, err)
}

// unknown releases the lock that the store may hold under token (its
// acquisition's outcome is unknown, or it came too late to use) and
// returns the caller's error: the context's, ErrClosed for a wait that
// Shutdown ended, or ErrUnavailable with err.
func (s *SingleLocker) unknown(ctx context.Context, op, resource, token string, err error) *Error {
	s.cleanup(ctx, op, resource, token)
	switch {
	case ended(ctx):
		return &Error{Err: ctxErr(ctx)}
	case errors.Is(err, errShutWait):
		return &Error{Err: ErrClosed}
	}
	return s.unavailable(err)
}

// errShutWait marks the error of a wait in line that Shutdown ended. A
// store's own error that wraps ErrClosed is a store failure like any
// other: only this one is the locker's ErrClosed.
var errShutWait = fmt.Errorf("%w: Shutdown ended the wait", ErrClosed)

// pastValidity is the error of a store that answered (did what) too late
// for the lock to be used.
func pastValidity(what string, after time.Duration) error {
	return fmt.Errorf("%s after %v, past the lock's validity", what, after.Round(time.Microsecond))
}

func (s *SingleLocker) unavailable(err error) *Error {
	return &Error{Err: ErrUnavailable, Stores: []StoreError{{Index: 0, Store: s.store.name, Err: err}}}
}

// cleanup releases a lock whose acquisition had an unknown outcome. A
// release that fails is tried again, up to cleanupTries times within the
// store timeout: the fault that broke the acquisition often broke more
// than one connection of the client, and a release failing at once on
// another of them would leave the lock held until its TTL runs out. A
// release that finds nothing does not settle it either: the acquisition
// may still be on its way to the store (its caller gave up, not the
// request). Unless a release succeeded, it goes on in the background
// (core.later).
func (s *SingleLocker) cleanup(ctx context.Context, op, resource, token string) {
	if s.release(ctx, op, resource, token) != nil {
		s.later(ctx, func(ctx context.Context) bool { return s.release(ctx, op, resource, token) == nil })
	}
}

// release releases token once, retrying a failure within a store
// timeout, and returns the last outcome.
func (s *SingleLocker) release(ctx context.Context, op, resource, token string) (err error) {
	cctx, cancel := s.cleanupContext(ctx)
	defer cancel()
	for range cleanupTries {
		t0 := s.obs.start()
		err = s.store.Release(cctx, resource, token)
		s.obs.storeCall(ctx, op, resource, &s.store, "release", t0, err)
		if err == nil || errors.Is(err, ErrNotHeld) || cctx.Err() != nil {
			return err
		}
	}
	return err
}

// IsLocked implements [Locker].
func (s *SingleLocker) IsLocked(ctx context.Context, resource string) (bool, error) {
	const op = "islocked"
	if err := s.checkQuery(ctx, op, resource); err != nil {
		return false, err
	}
	t0 := s.obs.start()
	ok, err := s.store.Exists(ctx, resource)
	s.obs.storeCall(ctx, op, resource, &s.store, "exists", t0, err)
	if err != nil {
		return false, s.fail(ctx, op, resource, err)
	}
	return ok, nil
}

// Unlock implements [Locker]. If ctx ends before the store answers, the
// lock stays held (until its TTL runs out, or an Unlock with a live
// context); nothing is retried in the background.
func (s *SingleLocker) Unlock(ctx context.Context, l Lock) error {
	const op = "unlock"
	if err := s.checkHeld(ctx, op, l); err != nil {
		return err
	}
	ctx = s.obs.begin(ctx, op, l.Resource)
	var err error
	var took time.Duration
	if s.local != nil {
		// The store's readings time the call: no clock reading here.
		_, took, err = s.local.ReleaseStamped(ctx, l.Resource, l.Token)
	} else {
		t0 := s.obs.start()
		err = s.store.Release(ctx, l.Resource, l.Token)
		if s.obs.on() {
			took = inproc.Since(t0)
		}
	}
	s.obs.storeCallTook(ctx, op, l.Resource, &s.store, "release", took, err)
	switch {
	case err == nil:
		s.forget(l)
	case errors.Is(err, ErrNotHeld):
		s.forget(l)
		err = &Error{Op: op, Resource: l.Resource, Err: ErrNotHeld}
	default:
		err = s.fail(ctx, op, l.Resource, err)
	}
	if s.obs.on() {
		s.obs.emit(ctx, Event{Kind: EventReleased, Op: op, Resource: l.Resource, Lock: l, Duration: took, Err: err})
	}
	return err
}

// Extend implements [Locker].
func (s *SingleLocker) Extend(ctx context.Context, l Lock, ttl time.Duration) (Lock, error) {
	const op = "extend"
	if err := s.enterExtend(ctx, op, l, ttl); err != nil {
		return Lock{}, err
	}
	defer s.gate.leave()
	if s.unextendable != nil {
		return Lock{}, s.unextendable(op, l.Resource)
	}
	ctx = s.obs.begin(ctx, op, l.Resource)
	start := inproc.Now()
	var err error
	if s.local != nil {
		err = s.local.ExtendStamped(ctx, s.owner, l.Resource, l.Token, s.storeTTL(ttl))
	} else {
		err = s.store.ext.Extend(ctx, l.Resource, l.Token, s.storeTTL(ttl))
	}
	elapsed := inproc.Since(start)
	s.obs.storeCallTook(ctx, op, l.Resource, &s.store, "extend", elapsed, err)
	switch {
	case err == nil && elapsed >= s.validity(ttl):
		s.mayHold(l, start, ttl, elapsed)
		err = &Error{Op: op, Resource: l.Resource, Err: fmt.Errorf("%w: extended after %v, past the new validity", ErrUnavailable, elapsed.Round(time.Microsecond))}
	case err == nil:
		l.ValidUntil = s.validUntil(start, ttl)
		if s.local == nil {
			s.held.extended(l, s.heldBeyond(elapsed, ttl))
		}
	case errors.Is(err, ErrNotHeld):
		s.forget(l)
		err = &Error{Op: op, Resource: l.Resource, Err: ErrNotHeld}
	default:
		if !errors.Is(err, ErrInvalid) { // refused, not run
			s.mayHold(l, start, ttl, elapsed)
		}
		err = s.fail(ctx, op, l.Resource, err)
	}
	if s.obs.on() {
		s.obs.emit(ctx, Event{Kind: EventExtended, Op: op, Resource: l.Resource, Lock: l, Duration: elapsed, Err: err})
	}
	if err != nil {
		return Lock{}, err
	}
	return l, nil
}

// forget removes l from the held set, if the locker keeps one.
func (s *SingleLocker) forget(l Lock) {
	if s.local == nil {
		s.held.remove(l)
	}
}

// fail wraps a store failure, or the context's error if ctx ended. A
// store that refused the request itself (ErrInvalid) refuses it again:
// that is final, as in attempt, not a failure.
func (s *SingleLocker) fail(ctx context.Context, op, resource string, err error) error {
	if ended(ctx) {
		return &Error{Op: op, Resource: resource, Err: ctxErr(ctx)}
	}
	if errors.Is(err, ErrInvalid) {
		return &Error{Op: op, Resource: resource, Err: ErrInvalid, Stores: []StoreError{{Index: 0, Store: s.store.name, Err: err}}}
	}
	e := s.unavailable(err)
	e.Op, e.Resource = op, resource
	return e
}

// answeredAfter returns how long after began a store call answered that
// a clock.Stamper reported by start and elapsed (a zero start: it failed
// before it read its clock).
func answeredAfter(began, start inproc.Instant, elapsed time.Duration) time.Duration {
	if start.IsZero() {
		return inproc.Since(began)
	}
	return start.Sub(began) + elapsed
}

// acquireOn acquires on one store, fenced when the store can fence.
func acquireOn(ctx context.Context, s storeRef, resource, token string, ttl time.Duration) (uint64, error) {
	if s.fencer != nil {
		return s.fencer.AcquireFenced(ctx, resource, token, ttl)
	}
	return 0, s.Acquire(ctx, resource, token, ttl)
}
