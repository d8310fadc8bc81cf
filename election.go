package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// ErrResigned is the cause (see [context.Cause]) with which a [Term]'s
// context is canceled when its leader resigns.
var ErrResigned = errors.New("lock: resigned")

// termMargin divides a lock's validity into the margin by which a term
// ends before it: a term ends at a tenth of the validity before the lock's.
const termMargin = 10

// Election elects one leader at a time for a named role among the
// processes that campaign for it through lockers over the same stores: the
// leader is the holder of a lock on the role, kept extended as [Run] keeps
// its lock. See "Elections, run-once jobs and lock delay" in the package
// documentation. Make one with [NewElection]: the methods of a zero (or
// nil) Election report an error matching [ErrInvalid].
type Election struct {
	locker Locker
	role   string
	ttl    time.Duration
	opts   []LockOption
	o      callOptions

	mu         sync.Mutex
	yieldUntil time.Time // after a term that MaxHold ended, when Campaign may try again (see rotated)
}

// NewElection returns an election for role over locker, whose terms are
// leases of ttl, renewed in the background. opts are those of [Run]:
// [WithRetry] (how Campaign waits: by default as the locker's Lock does,
// which with the default Options.Retry is until Campaign's context ends;
// NoRetry makes one attempt), [ExtendEvery] (how often a term is renewed:
// by default every third of it), [MaxHold] (a term ends that long after
// election, so that leaders rotate). It returns an error matching
// ErrInvalid, before anything is sent, for a nil locker, a locker that
// lets several holders in at once (a [Semaphore] of more than one permit,
// an [RWLocker]'s Reader side), an empty role, a ttl outside (0, MaxTTL],
// a retry policy that Lock would refuse, or options that do not fit the
// ttl; and, over a locker of this package, for a role or a ttl that its
// Lock would refuse on every campaign: a name a store cannot hold (see
// [ResourceValidator]), a ttl that leaves no room for Options.LockDelay
// under MaxTTL.
func NewElection(locker Locker, role string, ttl time.Duration, opts ...LockOption) (*Election, error) {
	const op = "election"
	o := collect(opts)
	switch {
	case role == "":
		return nil, invalidf(op, role, "empty role")
	case ttl <= 0:
		return nil, invalidf(op, role, "ttl is %v: want > 0", ttl)
	case ttl > MaxTTL:
		return nil, invalidf(op, role, "ttl is %v: want at most %v", ttl, MaxTTL)
	}
	if o.retry != nil {
		if err := o.retry.validate(); err != nil {
			return nil, invalidf(op, role, "%v", err)
		}
	}
	if err := checkRun(op, locker, role, ttl, o, termMargin); err != nil {
		return nil, err
	}
	if err := checkExclusive(op, role, locker); err != nil {
		return nil, err
	}
	if c, ok := locker.(argChecker); ok {
		if err := c.checkResource(op, role); err != nil {
			return nil, err
		}
		if err := c.checkTTL(op, role, ttl); err != nil {
			return nil, err
		}
	}
	return &Election{locker: locker, role: role, ttl: ttl, opts: slices.Clone(opts), o: o}, nil // not the caller's slice: the options checked
}

// Exclusive reports whether locker lets one holder at a time hold a
// resource. It is false for a [Semaphore] of more than one permit and for
// an [RWLocker]'s reader side, which [RunOnce], [NewElection],
// [NewSemaphore] and [NewRWLocker] refuse (so a semaphore or a read-write
// lock is never built over them), and true for every other Locker (those
// of other packages included: it cannot look inside them). A package that
// takes a lock per job or per term can refuse such a locker when it is
// configured, rather than at every run.
func Exclusive(locker Locker) bool { return sharedLocker(locker) == "" }

// checkExclusive refuses, for op on resource, a locker that lets several
// holders in at once.
func checkExclusive(op, resource string, locker Locker) error {
	if what := sharedLocker(locker); what != "" {
		return invalidf(op, resource, "the locker is %s, which lets several holders in at once: want a Locker of one holder at a time", what)
	}
	return nil
}

// sharedLocker says what locker is if it lets several holders hold a
// resource at once (a Semaphore of more than one permit, a read-write
// lock's reader side), and "" otherwise.
func sharedLocker(locker Locker) string {
	switch l := locker.(type) {
	case *Semaphore:
		if l.Limit() > 1 {
			return fmt.Sprintf("a Semaphore of %d permits", l.Limit())
		}
	case *rwSide:
		if !l.write {
			return "a read-write lock's reader side"
		}
	}
	return ""
}

// argChecker is a locker of ours, which checks a resource name and a ttl
// as its Lock does.
type argChecker interface {
	checkResource(op, resource string) error
	checkTTL(op, resource string, ttl time.Duration) error
}

// Role returns the role the election is for ("" for a zero Election).
func (e *Election) Role() string {
	if e == nil {
		return ""
	}
	return e.role
}

// check refuses an Election that NewElection did not make.
func (e *Election) check(op string) error {
	if e == nil || e.locker == nil {
		return invalidf(op, e.Role(), "Election not made by NewElection")
	}
	return nil
}

// Campaign waits until the caller is elected (as the election's retry
// policy says, by default the locker's: until ctx ends unless its
// Options.Retry says otherwise) and returns its term. ctx bounds
// the campaign only: the term lasts until [Term.Resign], or until its
// context ends (see [Term.Context]) — call Resign in every case, to free
// the role at once and stop the renewals. On failure the error is Lock's:
// ErrNotAcquired (another leads, after every attempt allowed), a context
// error, ErrUnavailable, ErrClosed (the locker was shut down) or
// ErrInvalid.
func (e *Election) Campaign(ctx context.Context) (*Term, error) {
	if err := e.check("campaign"); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, invalidf("campaign", e.role, "nil context")
	}
	base := context.WithoutCancel(ctx)
	return e.campaign(ctx, base, base)
}

// campaign is Campaign, for a term whose context is derived from base and
// which is renewed within renew.
func (e *Election) campaign(ctx, base, renew context.Context) (*Term, error) {
	if err := e.yield(ctx); err != nil {
		return nil, err
	}
	s := startHolding(e.locker, e.role)
	defer s.abandon() // if Lock fails, or panics; a no-op once watched
	held, err := e.locker.Lock(ctx, e.role, e.ttl, e.opts...)
	if err != nil {
		return nil, err
	}
	h := hold(base, renew, "campaign", e.locker, held, e.ttl, e.o, termMargin, s)
	return &Term{h: h, fence: held.Fence, e: e}, nil
}

// rotated gives the other campaigners a head start on this Election's
// next Campaign, after a term that MaxHold ended and whose resignation
// took took: without it, the former leader's Campaign, sent as soon as it
// resigned, would mostly beat those that learn of the release from the
// store (a watch, a notification) and then ask for the role, and the
// leaders would not rotate. The head start is four times the
// resignation's time, at least headStartMin, at most a quarter of the
// ttl.
func (e *Election) rotated(took time.Duration) {
	d := min(max(4*took, headStartMin), e.ttl/4)
	e.mu.Lock()
	e.yieldUntil = time.Now().Add(d)
	e.mu.Unlock()
}

// headStartMin is the least head start rotated gives.
const headStartMin = 10 * time.Millisecond

// yield waits for the head start rotated gave the other campaigners, if
// any is left; it returns Lock's error if ctx ends first, or if the
// locker is (or gets) shut down, when it is of this package.
func (e *Election) yield(ctx context.Context) error {
	e.mu.Lock()
	d := time.Until(e.yieldUntil)
	e.mu.Unlock()
	if d <= 0 {
		return nil
	}
	wait := ctx
	if g, ok := e.locker.(interface{ shutGate() *gate }); ok {
		var cancel context.CancelFunc
		wait, cancel = context.WithCancel(ctx)
		defer cancel()
		defer g.shutGate().afterShut(cancel)()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-wait.Done():
		if ctx.Err() == nil {
			return &Error{Op: "lock", Resource: e.role, Err: ErrClosed}
		}
		return &Error{Op: "lock", Resource: e.role, Err: ctxErr(ctx)}
	}
}

// Lead campaigns within ctx, runs fn while the caller leads, and resigns
// when fn returns (also when it panics). fn's context is the term's
// context, which also ends with ctx, with ctx's cause and error (Err
// reports context.DeadlineExceeded when ctx's deadline passed); the term is still
// renewed until fn returns. Lead returns Campaign's error if the caller
// was not elected, and otherwise, as [Run] does, fn's error joined with
// the cause of the term's end if the term was lost (ErrLost: a renewal
// found the role taken, or the term's end passed before fn returned, also
// after ctx ended) or reached its hold limit (ErrMaxHold, see [MaxHold])
// while fn ran, and with the resignation's error. A cause that ends the
// term's context with ctx (the loss of the lock of a Run whose function
// calls Lead, say) is ctx's, not the term's: Lead does not report it.
func (e *Election) Lead(ctx context.Context, fn func(ctx context.Context, t *Term) error) (err error) {
	if err := e.check("lead"); err != nil {
		return err
	}
	switch {
	case fn == nil:
		return invalidf("lead", e.role, "nil function")
	case ctx == nil:
		return invalidf("lead", e.role, "nil context")
	}
	// The term's context is derived from ctx: it, and every context
	// derived from it, ends with ctx's error. The term is renewed until
	// fn returns all the same.
	t, err := e.campaign(ctx, ctx, context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	defer func() {
		// As Run: fn's error, whatever it wraps, with the cause of a loss
		// or of the hold limit that it does not already say.
		cause, rerr := t.resign(context.WithoutCancel(ctx))
		err = runResult(err, cause, rerr)
	}()
	return fn(t.Context(), t)
}

// Leader is what an observer can tell of an election.
type Leader struct {
	// Elected reports whether someone leads.
	Elected bool
	// Holder is the leader's public identity (see Options.Holder), or ""
	// when the locker cannot tell it or it has none.
	Holder string
}

// holderReader is a Locker that can tell who holds a resource.
type holderReader interface {
	Holder(ctx context.Context, resource string) (holder string, held bool, err error)
}

// Leader reports whether someone leads now and, when the locker can tell
// (it has a Holder method, as [SingleLocker] and [MultiLocker] do over
// stores that keep the holder), who. Otherwise it asks IsLocked and the
// leader is unknown: Holder is "". With a MultiLocker, a role held on
// some stores only counts as led; over an [RWLocker]'s writer side, a
// campaigner still waiting for readers to leave does not lead.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	if err := e.check("leader"); err != nil {
		return Leader{}, err
	}
	if ctx == nil {
		return Leader{}, invalidf("leader", e.role, "nil context")
	}
	if hr, ok := e.locker.(holderReader); ok {
		holder, held, err := hr.Holder(ctx, e.role)
		switch {
		case err == nil && held:
			return Leader{Elected: true, Holder: holder}, nil
		case err != nil && !errors.Is(err, errors.ErrUnsupported):
			return Leader{}, leaderError(err)
		}
		// Free by the holder's account, or unknown: a MultiLocker's Holder
		// reports a role held on a minority of its stores as free, which
		// IsLocked (any store) counts as led.
	}
	held, err := e.locker.IsLocked(ctx, e.role)
	if w, ok := e.locker.(*rwSide); ok && w.write && err == nil && held {
		// The writer side's IsLocked counts a writer still waiting for
		// readers to leave: it leads once they have.
		var readers bool
		readers, err = w.rw.reader.IsLocked(ctx, e.role)
		held = !readers
	}
	if err != nil {
		return Leader{}, leaderError(err)
	}
	return Leader{Elected: held}, nil
}

// leaderError names Leader in err, a failure of the Holder or IsLocked
// call it made, if err is an *Error: an error names the call that failed.
func leaderError(err error) error {
	if e, ok := err.(*Error); ok {
		named := *e
		named.Op = "leader"
		return &named
	}
	return err
}

// Term is one leadership term: from election to resignation or loss.
// Its methods are safe for concurrent use. Terms come from
// [Election.Campaign] (and Lead): a zero (or nil) Term was never held —
// its context has ended with a cause matching [ErrInvalid], its lock is
// the zero Lock, and Resign reports ErrInvalid.
type Term struct {
	h     *holding
	fence uint64
	e     *Election // that elected it

	mu         sync.Mutex // serialises Resign
	resigned   bool
	cause      error // the cause with which the term had ended when it was resigned
	releaseErr error // the release's
}

// Context returns the term's context: the leader may act while it is not
// done. It carries the values of Campaign's context, and is canceled
//   - with a cause matching [ErrLost] when a renewal reports the role
//     taken over, or when the term's end (see ValidUntil) passes before a
//     renewal succeeded: from then on its Err reports it, and its Done
//     channel closes at most a scheduling delay later; the term ends a
//     tenth of the lock's validity before the lock's validity does, and
//     no other can be elected before the lock's validity ends;
//   - with cause [ErrMaxHold] at the election's MaxHold;
//   - with cause [ErrResigned] by Resign;
//   - with ctx's cause when the ctx of [Election.Lead] ends (which is no
//     end of the term's own: see Lead).
func (t *Term) Context() context.Context {
	if t.zero() {
		return zeroTermContext
	}
	return t.h.ctx
}

// zero reports whether t was not made by Campaign.
func (t *Term) zero() bool { return t == nil || t.h == nil }

// errZeroTerm is what a zero Term reports.
var errZeroTerm = invalidf("term", "", "Term not made by Campaign")

// zeroTermContext is a zero Term's context: ended, with errZeroTerm.
var zeroTermContext = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errZeroTerm)
	return ctx
}()

// Fence returns the term's fence: the lock's (see [Lock.Fence]), strictly
// greater than every earlier term's when the stores fence, else 0. Pass it
// to what the leader writes to, so that a deposed leader's writes can be
// refused.
func (t *Term) Fence() uint64 {
	if t.zero() {
		return 0
	}
	return t.fence
}

// ValidUntil returns the end of the term as of its latest renewal: the
// lock's validity less a tenth of it. The leader may act until then;
// after it, another may be elected once the lock's validity has run out.
// With the election's MaxHold, the term ends then at the latest. Once the
// term is lost or resigned, it is in the past.
func (t *Term) ValidUntil() time.Time {
	if t.zero() {
		return time.Time{}
	}
	end := t.h.k.end(t.h.k.current())
	if at := t.h.k.maxHoldAt; !at.IsZero() && at.Before(end) {
		return at
	}
	return end
}

// Lock returns the lock that makes the term, as of its latest renewal;
// once the term is lost or resigned, its Valid reports false.
func (t *Term) Lock() Lock {
	if t.zero() {
		return Lock{}
	}
	return t.h.k.current()
}

// Resign ends the term: it cancels the term's context with cause
// [ErrResigned] (unless it had already ended), stops the renewals and
// releases the role so that another can be elected at once. It returns
// the cause of the term's loss if it was lost before (matching ErrLost:
// the term's own, not a cause that Lead's ctx ended its context with),
// and the release's error if the release failed (ErrUnavailable: the role
// stays taken until the lock expires). A term that reached its MaxHold
// leaves its lock to run out: finding it run out is no error, nor is
// finding it released by the locker's UnlockAll or Shutdown once Resign
// has begun (before, unless the hold limit had passed, they ended the
// term: ErrLost). Later calls
// return the same, whatever their context. A nil context is refused with
// ErrInvalid unless the term was already resigned, and changes nothing.
func (t *Term) Resign(ctx context.Context) error {
	if t.zero() {
		return invalidf("resign", "", "Term not made by Campaign")
	}
	if ctx == nil {
		t.mu.Lock()
		resigned := t.resigned
		t.mu.Unlock()
		if !resigned {
			return invalidf("resign", t.h.k.current().Resource, "nil context")
		}
	}
	return resignResult(t.resign(ctx))
}

// resign resigns once, as Resign does, and returns the cause that had
// ended the term, if any (its loss or its hold limit: see keeper.cause),
// and the release's error. Later calls return the same.
func (t *Term) resign(ctx context.Context) (cause, releaseErr error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.resigned {
		t.h.catchUp() // a term whose end or hold limit passed has ended
		t.h.cancel(fmt.Errorf("%w: %q", ErrResigned, t.h.k.current().Resource))
		start := time.Now()
		t.cause, t.releaseErr = t.h.release(ctx)
		t.resigned = true
		if errors.Is(t.cause, ErrMaxHold) && t.e != nil {
			t.e.rotated(time.Since(start))
		}
	}
	return t.cause, t.releaseErr
}

// resignResult is what Resign returns for a term that had ended with
// cause and whose release returned releaseErr: the loss, and a failed
// release; a lock lost, or left to run out at the hold limit, that the
// release finds not held is no further error.
func resignResult(cause, releaseErr error) error {
	lost, runOut := errors.Is(cause, ErrLost), errors.Is(cause, ErrMaxHold)
	if (lost || runOut) && errors.Is(releaseErr, ErrNotHeld) {
		releaseErr = nil
	}
	if lost {
		return errors.Join(cause, releaseErr)
	}
	return releaseErr
}
