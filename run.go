package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Run acquires resource with locker.Lock (retrying as opts say), runs fn
// while keeping the lock extended in the background, and releases it when
// fn returns — also when fn panics, in which case the panic continues
// after the release.
//
// Each extension sets the TTL to ttl from the moment it is made, every
// third of the lock's validity (ttl less the drift allowance; see
// [Lock.ValidUntil]) unless [ExtendEvery] says otherwise, counted from
// the start of the acquisition or extension before it, so that a slow
// one does not put the next past the lock's validity; an interval that
// is not shorter than the validity is refused. (With a Locker of another
// package, a wrapper of ours say, whose validity Run cannot know in
// advance, the interval must be shorter than ttl, and each extension comes
// early enough for the validity the acquisition or the extension before
// it left, however slow it was: at most half of it later.) fn's context
// is canceled:
//   - with cause [ErrLost] when an extension reports the lock not held, or
//     when the lock's validity runs out before an extension succeeded
//     (extensions keep failing, or the store cannot extend locks): from
//     [Lock.ValidUntil] on, the context's Err reports it, and its Done
//     channel closes at most a scheduling delay later;
//   - with cause [ErrLost] when the locker's UnlockAll or Shutdown
//     releases the lock, before it releases it (already when fn starts,
//     if they release it as Run takes it);
//   - with cause [ErrMaxHold] once the time set with [MaxHold] has passed
//     since acquisition (the lock is no longer extended from then on, and
//     is left to run out: its end after the limit is no loss, and hooks
//     get no [EventLost] for it);
//   - when ctx is canceled, with ctx's cause (the extensions stop then: a
//     function that outlives the lock's validity after that has lost the
//     lock, and the loss is reported as below, and to hooks, when the
//     validity runs out);
//   - when fn returns, before the lock is released (an extension under
//     way then is abandoned: it does not hold up the release).
//
// fn receives the lock as acquired; [FromContext] on fn's context returns
// it as of its latest extension, so that fn can check that it is still
// valid, and read its fence, before each protected write.
//
// Run returns the error of Lock if the lock could not be acquired, and
// otherwise fn's error joined with [ErrLost] if the lock was lost while
// fn ran (an extension found it not held, UnlockAll or Shutdown released
// it, or its validity ran out before fn returned — also after ctx was
// canceled), or with [ErrMaxHold] if the hold limit ended fn's context or
// the lock ran out after it while fn ran — also when fn returned nil —
// and with Unlock's error (if the release failed; a lock lost, or left to
// run out at the hold limit, that the release finds not held is no
// further error, nor is one that UnlockAll or Shutdown released once fn
// had returned). ctx's cancellation alone, with fn returning within the
// lock's validity, is no loss; nor is a cause that ends fn's context with
// ctx (the loss of an enclosing Run's lock, say): it is ctx's, not this
// lock's, and Run does not report it.
func Run(ctx context.Context, locker Locker, resource string, ttl time.Duration, fn func(ctx context.Context, l Lock) error, opts ...LockOption) (err error) {
	const op = "run"
	o := collect(opts)
	if fn == nil {
		return invalidf(op, resource, "nil function")
	}
	if err := checkContext(ctx, op, resource); err != nil {
		return err
	}
	if err := checkRun(op, locker, resource, ttl, o, 0); err != nil {
		return err
	}
	s := startHolding(locker, resource)
	defer s.abandon() // if Lock fails, or panics; a no-op once watched
	held, err := locker.Lock(ctx, resource, ttl, opts...)
	if err != nil {
		return err
	}
	h := hold(ctx, ctx, op, locker, held, ttl, o, 0, s)
	defer func() {
		cause, uerr := h.release(ctx)
		err = runResult(err, cause, uerr)
	}()
	return fn(h.ctx, held)
}

// checkRun validates the arguments that Run, RunOnce and elections
// share, before anything is sent: the extension interval must fit the
// lock's validity less a divisor-th of it (see hold) when the locker is
// one of ours, whose validity is known in advance.
func checkRun(op string, locker Locker, resource string, ttl time.Duration, o callOptions, divisor int) error {
	switch {
	case locker == nil || isNilPointer(locker):
		return invalidf(op, resource, "nil Locker")
	case unmade(locker) != "":
		return invalidf(op, resource, "the Locker is a zero %T, not made by %s", locker, unmade(locker))
	case o.maxHold < 0:
		return invalidf(op, resource, "MaxHold is %v: want >= 0", o.maxHold)
	case o.extendEvery < 0 || (o.extendEvery > 0 && o.extendEvery < minDelay):
		return invalidf(op, resource, "ExtendEvery is %v: want at least %v", o.extendEvery, minDelay)
	}
	validity, known := validityOf(locker, ttl)
	if !known {
		// Another package's Locker: its validity is known only once a
		// lock is held (see hold), but the interval must be shorter than
		// ttl whatever it is.
		if limit := ttl - margin(ttl, divisor); ttl > 0 && o.extendEvery >= limit {
			return invalidf(op, resource, "ExtendEvery is %v: want less than the ttl (%v)", o.extendEvery, limit)
		}
		return nil
	}
	if validity <= 0 {
		// Not the interval's fault: the ttl's, as Lock would say.
		return invalidf(op, resource, "ttl %v leaves no validity after the clock-drift and granularity allowance of %v", ttl, ttl-validity)
	}
	if divisor > 0 && validity/time.Duration(divisor) <= 0 {
		return invalidf(op, resource, "ttl %v leaves no validity for a term", ttl)
	}
	room := validity - margin(validity, divisor)
	if o.extendEvery == 0 && room <= minDelay {
		// The default interval, a third of room but at least minDelay,
		// would not be shorter than room.
		return invalidf(op, resource, "ttl %v leaves %v of validity: too short to be extended at most every %v", ttl, room, minDelay)
	}
	if o.extendEvery < room {
		return nil
	}
	if divisor > 0 {
		return invalidf(op, resource, "ExtendEvery is %v: want less than a term (%v: the lock's validity, the ttl less the drift allowance, less 1/%d of it)", o.extendEvery, room, divisor)
	}
	return invalidf(op, resource, "ExtendEvery is %v: want less than the lock's validity (%v: the ttl less the drift allowance)", o.extendEvery, room)
}

// unmade names the constructor that did not make locker, a zero locker
// of this package, and returns "" for any other locker.
func unmade(locker Locker) string {
	switch l := locker.(type) {
	case *SingleLocker:
		if l.eng == nil {
			return "NewSingle"
		}
	case *MultiLocker:
		if l.eng == nil {
			return "NewMulti"
		}
	case *Semaphore:
		if l.impl == nil {
			return "NewSemaphore"
		}
	case *rwSide:
		if l.eng == nil {
			return "NewRWLocker"
		}
	}
	return ""
}

// margin is a divisor-th of validity, or 0 when divisor is 0.
func margin(validity time.Duration, divisor int) time.Duration {
	if divisor <= 0 {
		return 0
	}
	return validity / time.Duration(divisor)
}

// validityOf returns the validity of a lock of ttl when locker is one of
// ours, not built on another package's Locker, and ttl is valid.
func validityOf(locker Locker, ttl time.Duration) (time.Duration, bool) {
	v, ok := locker.(interface {
		validity(time.Duration) time.Duration
		validityKnown() bool
	})
	if !ok || ttl <= 0 || !v.validityKnown() {
		return 0, false
	}
	return v.validity(ttl), true
}

// holding is a lock kept extended in the background, for Run and for an
// election's term.
type holding struct {
	halted   sync.Once
	k        *keeper
	ctx      context.Context         // the holder's: canceled on loss, at the hold limit, with ctx
	cancel   context.CancelCauseFunc // cancels ctx (the keeper's lost)
	stopHold context.CancelFunc      // releases the hold limit's timer
	exited   chan struct{}           // closed once the keeper stopped
	abandon  context.CancelFunc      // cancels the extension under way, if any
	unwatch  func()                  // ends the record of the keeper (see watch); once the lock is released, kept or lost
}

// hold starts keeping held, just acquired with ttl, extended within renew
// as Run does, at the interval checkRun accepted. The holder's context is
// derived from ctx, and ends at the lock's validity less a divisor-th of
// its validity (no margin when divisor is 0). s is the holder's record
// from before its Lock call (see starting).
func hold(ctx, renew context.Context, op string, locker Locker, held Lock, ttl time.Duration, o callOptions, divisor int, s *starting) *holding {
	acquired := time.Now()
	validity, known := validityOf(locker, ttl)
	if !known {
		// Another Locker (a wrapper of ours, say): the validity left
		// right after acquisition is as close as we can know it. A slow
		// acquisition shortens it, so the interval was held against the
		// ttl (checkRun), and the first extension comes in time (below).
		validity = held.ValidUntil.Sub(acquired)
	}
	margin := margin(validity, divisor)
	every := o.extendEvery
	if every == 0 {
		every = max((validity-margin)/3, minDelay)
	}
	// The first extension comes every after the acquisition began (as
	// the next ones come every after the extension before began), so
	// that a slow acquisition, which left less of the validity, does not
	// put it past the lock's validity. With another Locker, whose
	// validity is known only now, at most half of what is left later.
	first := max(every-time.Since(held.ValidUntil.Add(-validity)), minDelay)
	if !known {
		first = min(every, max((validity-margin)/2, minDelay))
	}
	inner, cancel := context.WithCancelCause(ctx)
	// The extensions end with renew, and when the holder is done: one
	// under way then, stuck in a store call, must not hold up the release.
	extending, abandon := context.WithCancel(renew)
	h := &holding{ctx: inner, cancel: cancel, stopHold: func() {}, exited: make(chan struct{}), abandon: abandon}
	var maxHoldAt time.Time
	var maxHoldCause error
	maxHeld := func() {}
	if o.maxHold > 0 {
		// The hold limit is the context's deadline; the layer under it
		// lets Err end the context at the limit before the deadline's
		// timer has fired (see runContext.Err).
		maxHoldAt = acquired.Add(o.maxHold)
		cause := fmt.Errorf("%w: %q held for %v", ErrMaxHold, held.Resource, o.maxHold)
		limited, limit := context.WithCancelCause(inner)
		deadlined, stop := context.WithDeadlineCause(limited, maxHoldAt, cause)
		h.ctx, h.stopHold = deadlined, func() { stop(); limit(nil) }
		maxHeld, maxHoldCause = func() { limit(cause) }, cause
	}
	h.k = &keeper{op: op, locker: locker, cur: held, ttl: ttl, first: first, every: every, unknown: !known, margin: margin, maxHoldAt: maxHoldAt, maxHoldCause: maxHoldCause, maxHeld: maxHeld, lost: cancel, lostCh: make(chan struct{}), stop: make(chan struct{})}
	h.ctx = runContext{Context: h.ctx, k: h.k}
	h.unwatch = sync.OnceFunc(s.watch(ctx, held, h.k))
	go func() {
		defer close(h.exited)
		if !h.k.run(extending) {
			h.unwatch() // lost or run out: nothing for UnlockAll to end
		}
	}()
	return h
}

// halt stops the keeper, abandoning the extension under way if any, and
// waits for it: no extension may outlive it.
func (h *holding) halt() {
	h.halted.Do(func() {
		close(h.k.stop)
		h.abandon()
		<-h.exited
	})
}

// release stops the keeper, releases the lock within ctx (but not its
// cancellation, bounded by the TTL), and returns the cause that ended the
// holder's claim, if any (see keeper.cause), and the release's error.
func (h *holding) release(ctx context.Context) (cause, unlockErr error) {
	defer h.unwatch() // only now (and also if Unlock panics): UnlockAll, releasing it meanwhile, marks it released
	l, cause := h.end()
	uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), h.k.ttl)
	unlockErr = ownDeadline(h.k.locker.Unlock(uctx, l), "the lock's TTL")
	ucancel()
	if errors.Is(unlockErr, ErrNotHeld) && h.k.released.Load() {
		unlockErr = nil // released by UnlockAll or Shutdown once the holder was done: no failure
	}
	return cause, unlockErr
}

// ownDeadline returns err, the error of a call that a deadline of the
// locker's own ended (within: what bounded it), as a store failure: only
// the caller's context makes an error match the context errors.
func ownDeadline(err error, within string) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	cause := fmt.Errorf("%w: no answer within %s", ErrUnavailable, within)
	var e *Error
	if !errors.As(err, &e) {
		return cause
	}
	c := *e
	c.Err = cause
	return &c
}

// end stops the keeper and ends the holder's claim before the lock is
// released or left to run out: the holder's context is canceled (if it
// had not ended) and the lock that FromContext and the Term report is
// no longer valid, so that nothing that outlives the holder's function
// acts on a lock it no longer holds. It returns the lock as held, to
// release or keep, and the cause that ended the holder's claim, if any:
// the loss or the hold limit (see keeper.cause). Later calls return the
// same lock.
func (h *holding) end() (l Lock, cause error) {
	h.halt()
	h.catchUp()                // a validity that ran out before the holder was done is a loss
	h.k.loseOnce.Do(func() {}) // the holder is done: no loss is reported from here on
	ended := context.Cause(h.ctx)
	h.stopHold()
	h.cancel(nil) // before the validity is cut, so that Err never reports nil for a lock cut
	l = h.k.finish()
	return l, h.k.cause(ended, l)
}

// catchUp reports a loss or the hold limit if the lock's validity or the
// hold limit has passed, even if the timer that would report it has not
// fired yet (see runContext.Err), and also once the holder's context has
// ended otherwise (ctx canceled).
func (h *holding) catchUp() { h.k.check() }

// FromContext returns the lock that [Run] holds for the function whose
// context is ctx (or a context derived from it), as of its latest
// extension: its ValidUntil moves with each extension, and is cut to the
// moment of the loss when the lock is lost (fn's context then ends with
// [ErrLost], unless it had ended already: an extension found it not
// held, its validity ran out, or UnlockAll or Shutdown released it), and
// to the moment fn returned once it has (the lock is
// then released, or kept for [MinInterval] but no longer for fn), so
// that FromContext(ctx).Valid() tells whether the lock may still be
// relied on, also in a goroutine that outlives fn. The contexts of [RunOnce]'s function and of an
// election's [Term] carry their lock the same way. It reports false for
// any other context, nil included.
func FromContext(ctx context.Context) (Lock, bool) {
	if ctx == nil {
		return Lock{}, false
	}
	if k, ok := ctx.Value(keeperKey{}).(*keeper); ok {
		return k.current(), true
	}
	return Lock{}, false
}

type keeperKey struct{}

// runContext is the context Run gives its function: Err reports the loss
// as soon as the lock's validity has run out, and the hold limit as soon
// as it has passed, even before the timers that cancel the context have
// fired, and Value carries the keeper for FromContext.
type runContext struct {
	context.Context
	k *keeper
}

func (c runContext) Err() error {
	err := c.Context.Err()
	if err == nil {
		c.k.check()
		err = c.Context.Err()
	}
	return err
}

func (c runContext) Value(key any) any {
	if key == (keeperKey{}) {
		return c.k
	}
	return c.Context.Value(key)
}

// runResult combines fn's error with the cause of a loss or of the hold
// limit (the keeper's own: see keeper.cause) and with the release's error.
func runResult(fnErr, cause, unlockErr error) error {
	errs := []error{fnErr}
	ours := errors.Is(cause, ErrLost) || errors.Is(cause, ErrMaxHold)
	if ours && !errors.Is(fnErr, cause) {
		errs = append(errs, cause)
	}
	// A lost lock, or one left to run out at the hold limit, is not held
	// at the release: the cause says so already.
	if unlockErr != nil && !(ours && errors.Is(unlockErr, ErrNotHeld)) {
		errs = append(errs, unlockErr)
	}
	return errors.Join(errs...)
}

// keeper extends a lock in the background for Run.
type keeper struct {
	op           string // "run", "runonce", "campaign": the operation in its events
	locker       Locker
	ttl          time.Duration
	first        time.Duration // until the first extension
	every        time.Duration // between the starts of the extensions after it
	unknown      bool          // the locker's validity is not known in advance: see next
	margin       time.Duration // the holder's context ends this long before the lock's validity
	maxHoldAt    time.Time
	maxHoldCause error  // the cause of the hold limit, if set
	maxHeld      func() // ends the holder's context with ErrMaxHold (at maxHoldAt, if set)
	lost         context.CancelCauseFunc
	lostCh       chan struct{} // closed once loseOnce has run loseAt: the keeper has nothing more to do
	stop         chan struct{}
	released     atomic.Bool // UnlockAll or Shutdown released the lock (see endKeepers), perhaps after the holder was done
	loseOnce     sync.Once

	mu      sync.Mutex
	cur     Lock  // the lock as of its latest extension; its validity ends at the loss
	lastErr error // the last extension's failure, if it failed
	lostErr error // the cause of the loss, once lost (before the hold limit)
	gone    bool  // lost: no extension revives cur
	final   *Lock // the lock as held when the holder's claim ended (finish)
}

// check reports, as their timers would, a validity that has run out (a
// loss, unless the hold limit came first) and a hold limit that has
// passed.
func (k *keeper) check() {
	if !k.valid() {
		k.expired()
	}
	if at := k.maxHoldAt; !at.IsZero() && !time.Now().Before(at) {
		k.maxHeld()
	}
}

// pastHold reports whether the hold limit, if any, is not after at.
func (k *keeper) pastHold(at time.Time) bool {
	return !k.maxHoldAt.IsZero() && !at.Before(k.maxHoldAt)
}

// cause returns what ended the holder's claim on l, as Run reports it,
// once the holder is done: the loss, if the lock was lost before the hold
// limit; the hold limit, if it ended the holder's context (ended is its
// cause) or l ran out after it; else nil. A cause that came with the
// parent context (its cancellation, the loss of an enclosing Run's lock)
// is not this lock's.
func (k *keeper) cause(ended error, l Lock) error {
	k.mu.Lock()
	lost := k.lostErr
	k.mu.Unlock()
	switch {
	case lost != nil:
		return lost
	case k.maxHoldCause == nil:
		return nil
	case ended == k.maxHoldCause, k.pastHold(time.Now()) && !time.Now().Before(k.end(l)):
		return k.maxHoldCause
	}
	return nil
}

// finish ends the validity of the lock that FromContext returns, once the
// holder is done with it, and returns the lock as it was, for its release
// (or keeping, for MinInterval). Later calls return the same lock.
func (k *keeper) finish() Lock {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.final == nil {
		l := k.cur
		k.final, k.gone = &l, true
		if now := time.Now(); now.Before(k.cur.ValidUntil) {
			k.cur.ValidUntil = now
		}
	}
	return *k.final
}

func (k *keeper) current() Lock {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cur
}

// end is when the holder's context ends for l: its validity less the
// margin.
func (k *keeper) end(l Lock) time.Time { return l.ValidUntil.Add(-k.margin) }

// valid reports whether the holder may still act: its end has not passed.
func (k *keeper) valid() bool { return time.Now().Before(k.end(k.current())) }

// run keeps the lock extended until the holder is done (k.stop: it
// returns true) or the keeper has nothing more to do: the lock is lost or
// left to run out at the hold limit (false).
func (k *keeper) run(ctx context.Context) (halted bool) {
	next := time.NewTimer(k.first)
	defer next.Stop()
	// The end of the validity is watched apart from the extensions, which
	// may be stuck in a store call.
	end := time.AfterFunc(time.Until(k.end(k.current())), k.expired)
	defer end.Stop()
	for {
		select {
		case <-k.stop:
			return true
		case <-ctx.Done():
			k.idle()
			return true
		case <-k.lostCh:
			return false // lost (UnlockAll, Shutdown, the validity ran out): no extension revives it
		case <-next.C:
		}
		if !k.maxHoldAt.IsZero() && !time.Now().Before(k.maxHoldAt) {
			return false // the hold limit canceled fn's context; let the lock run out
		}
		cur := k.current()
		if !time.Now().Before(k.end(cur)) {
			// Too late: an extension now could not save the lock, whose
			// loss is (or is about to be) reported.
			k.expired()
			return false
		}
		began := time.Now()
		ectx, ecancel := context.WithDeadline(ctx, cur.ValidUntil)
		extended, err := k.locker.Extend(ectx, cur, k.ttl)
		if err != nil && !ended(ctx) {
			err = ownDeadline(err, "the lock's validity") // ectx's, not the caller's
		}
		ecancel()
		switch {
		case err == nil:
			if !end.Stop() {
				return false // the validity ran out first: the loss is reported
			}
			k.mu.Lock()
			gone := k.gone
			if !gone {
				k.cur, k.lastErr = extended, nil
			}
			k.mu.Unlock()
			if gone {
				return false // lost while the extension was under way (UnlockAll, say)
			}
			end.Reset(time.Until(k.end(extended)))
			next.Reset(k.next(began, extended))
			continue
		case ctx.Err() != nil:
			k.idle()
			return true
		case errors.Is(err, errors.ErrUnsupported):
			k.fail(err)
			continue // no further extension: the lock runs out at its validity
		case errors.Is(err, ErrNotHeld):
			k.lose(ctx, "an extension found it not held", err)
			return false
		case shutDown(err):
			k.lose(ctx, "the locker was shut down", err)
			return false
		}
		// A store failed but the lock may still be valid: try again soon.
		// The end reports the loss if the validity runs out first.
		k.fail(err)
		next.Reset(max(min(k.every/4, time.Until(k.end(cur))/2), minDelay))
	}
}

// idle waits, once ctx ended the extensions (and fn's context with it),
// until the holder is done, with the end of the validity still watched: a
// holder that outlives its lock after its context ended has lost it.
func (k *keeper) idle() { <-k.stop }

// next returns how long after an extension that began at began, and left
// the lock extended, to start the next one: every from the last start,
// however long it took. With a Locker whose validity Run could not check
// the interval against (one of another package), at most half of what
// the extension left of the validity, so that the next comes in time.
func (k *keeper) next(began time.Time, extended Lock) time.Duration {
	d := k.every - time.Since(began)
	if k.unknown {
		d = min(d, max(time.Until(k.end(extended))/2, minDelay))
	}
	return d
}

// fail records an extension's failure, keeping the most telling one: a
// store's own error says more than the deadline that ended a later try.
func (k *keeper) fail(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lastErr == nil || !errors.Is(err, context.DeadlineExceeded) {
		k.lastErr = err
	}
}

// expired reports the lock lost because its validity ran out before an
// extension succeeded.
func (k *keeper) expired() {
	k.mu.Lock()
	err, at := k.lastErr, k.end(k.cur)
	k.mu.Unlock()
	what := "its validity"
	if k.margin > 0 {
		what = "its term (its validity less " + k.margin.String() + ")"
	}
	why := what + " ran out before an extension succeeded"
	if errors.Is(err, errors.ErrUnsupported) {
		why = what + " ran out: the store cannot extend locks"
	} else if err == nil {
		err = errors.New("no extension answered in time")
	}
	k.loseAt(context.Background(), at, why, err)
}

// lose cancels fn's context with a loss cause, once, and tells the
// locker's hook. It ends the validity of the lock that FromContext
// returns, so that its Valid reports the loss too: the lock may be
// released already (UnlockAll, Shutdown) or taken over.
func (k *keeper) lose(ctx context.Context, why string, err error) {
	k.loseAt(ctx, time.Now(), why, err)
}

// loseAt is lose for a loss that happened at at. A loss at or after the
// hold limit is none: the keeper gave the lock up then, and the holder's
// context ends with ErrMaxHold; the lock that FromContext returns is
// still no longer valid.
func (k *keeper) loseAt(ctx context.Context, at time.Time, why string, err error) {
	k.loseOnce.Do(func() {
		defer close(k.lostCh)
		past := k.pastHold(at)
		if past {
			k.maxHeld() // before the validity is cut, as the cancellation below
		}
		k.mu.Lock()
		cur := k.cur
		k.gone = true
		if now := time.Now(); now.Before(k.cur.ValidUntil) {
			k.cur.ValidUntil = now
		}
		var cause *lostError
		if !past {
			cause = &lostError{resource: cur.Resource, why: why, err: err}
			k.lostErr = cause
		}
		k.mu.Unlock()
		if past {
			return
		}
		k.lost(cause)
		if o, ok := k.locker.(interface{ observer() observer }); ok {
			o.observer().emit(ctx, Event{Kind: EventLost, Op: k.op, Resource: cur.Resource, Lock: cur, Err: cause})
		}
	})
}

// lostError is the cause with which Run cancels its function's context
// when the lock is lost. It matches ErrLost and what the locker said.
type lostError struct {
	resource string
	why      string
	err      error
}

func (e *lostError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("lock %q lost: %s", e.resource, e.why)
	}
	return fmt.Sprintf("lock %q lost: %s: %s", e.resource, e.why, detail(e.err))
}

func (e *lostError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrLost}
	}
	return []error{ErrLost, e.err}
}
