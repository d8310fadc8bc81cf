package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// The fan-out of a MultiLocker: how one locker operation becomes calls to
// every store, each bounded by the store timeout.

// start starts call c on store i within sctx, a context derived from ctx
// that carries the store timeout, and calls done with the outcome once the
// store answers, on whatever goroutine delivers it; the hook is told.
// Stores that are Starters are asked directly; the others get a goroutine
// for the call. A timeout of the store call, while ctx is alive, becomes
// a timeoutError — also when the store reports context.DeadlineExceeded a
// moment before sctx does (a client whose socket deadline, set from sctx,
// fires before sctx's own timer), so that no error of a live ctx matches
// DeadlineExceeded.
func (m *MultiLocker) start(ctx, sctx context.Context, op string, i int, c Call, done func(i int, fence uint64, err error)) {
	s := &m.stores[i]
	t0 := m.obs.start()
	var answered atomic.Bool
	finish := func(fence uint64, err error) {
		if answered.Swap(true) {
			return // a broken store's second answer
		}
		err = m.storeTimedOut(ctx, sctx, err)
		m.obs.storeCall(ctx, op, c.Resource, s, storeOps[c.Op], t0, err)
		done(i, fence, err)
	}
	switch {
	case c.Op == CallExtend && s.ext == nil:
		// Not errors.ErrUnsupported: Extend reports that only when too
		// few stores can extend to make a quorum (see MultiLocker.Extend);
		// otherwise this store is a failure among others, and the
		// extension may succeed when they answer.
		finish(0, errCannotExtend)
	case s.starter != nil:
		s.starter.Start(sctx, c, finish)
	default:
		go func() { finish(c.Run(sctx, s.Store)) }()
	}
}

// errCannotExtend is the outcome of an extension on a store that is not
// an Extender.
var errCannotExtend = errors.New("cannot extend locks")

// storeOps names the calls in Event.StoreOp: as SingleLocker names them,
// an acquisition fenced or not.
var storeOps = [...]string{
	CallAcquire:       "acquire",
	CallAcquireFenced: "acquire",
	CallRelease:       "release",
	CallExtend:        "extend",
	CallRaiseFence:    "raisefence",
}

// storeTimedOut turns err, the error of a store call made within sctx
// (derived from ctx with the store timeout), into a timeoutError if the
// store timeout rather than ctx ended the call.
func (m *MultiLocker) storeTimedOut(ctx, sctx context.Context, err error) error {
	if err != nil && !isOutcome(err) && !ended(ctx) && (sctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)) {
		return timeoutError{after: m.storeTimeout.String()}
	}
	return err
}

// fanout makes call c on every store at once, each within the store
// timeout, and returns their errors in store order. With only set, it
// calls the stores i for which only(i) is true and leaves the other
// errors nil.
func (m *MultiLocker) fanout(ctx context.Context, op string, c Call, only func(i int) bool) []error {
	errs := make([]error, len(m.stores))
	sctx, cancel := context.WithTimeout(ctx, m.storeTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i := range m.stores {
		if only == nil || only(i) {
			wg.Add(1)
			m.start(ctx, sctx, op, i, c, func(i int, _ uint64, err error) {
				errs[i] = err
				wg.Done()
			})
		}
	}
	wg.Wait()
	return errs
}

// releaseOn releases c's token on store i, within a store timeout of
// being asked, and sends the outcome to results. A release that fails is
// tried again, up to cleanupTries times within that timeout: the fault
// that made a store fail often broke the connection the release goes out
// on too. With later set, a release that still fails, or that finds
// nothing where ambiguous says an acquisition may yet land there, goes on
// in the background (releaseLater). A store that refuses the request
// itself (ErrInvalid) refuses it again: it is not asked again.
//
// A try that finds nothing (ErrNotHeld) after a try that failed is a
// release, unless ambiguous: the failed try may have applied (its reply
// lost), and the store holds nothing now either way. Reporting it as "not
// held" would make an Unlock whose replies were lost report the lock
// expired, although every store held it.
func (m *MultiLocker) releaseOn(ctx context.Context, op string, i int, c Call, later, ambiguous bool, results chan<- storeResult) {
	rctx, cancel := context.WithTimeout(ctx, m.storeTimeout)
	tries := 1
	var released func(int, uint64, error)
	released = func(_ int, _ uint64, err error) {
		final := err == nil || errors.Is(err, ErrNotHeld) || errors.Is(err, ErrInvalid)
		if !final && rctx.Err() == nil && tries < cleanupTries {
			tries++
			m.start(ctx, rctx, op, i, c, released)
			return
		}
		cancel()
		if later && err != nil && !errors.Is(err, ErrInvalid) && (!isOutcome(err) || ambiguous) {
			m.releaseLater(ctx, op, c, i, ambiguous)
		}
		if tries > 1 && !ambiguous && errors.Is(err, ErrNotHeld) {
			err = nil // an earlier try failed: it may have released the token
		}
		results <- storeResult{i, err}
	}
	m.start(ctx, rctx, op, i, c, released)
}

// releaseAll releases c's token on every store, or with only set on the
// stores i for which only(i) is true (see releaseOn), and returns their
// errors in store order; see collect for patient.
func (m *MultiLocker) releaseAll(ctx context.Context, op string, c Call, only func(i int) bool, later, patient bool) []error {
	results := make(chan storeResult, len(m.stores))
	asked := make([]bool, len(m.stores))
	for i := range m.stores {
		if asked[i] = only == nil || only(i); asked[i] {
			m.releaseOn(ctx, op, i, c, later, false, results)
		}
	}
	return m.collect(results, asked, patient)
}

// errAnswering stands for the outcome of a store still answering when
// collect returned.
var errAnswering = errors.New("still answering")

// collect receives from results the outcomes of the stores i for which
// wait[i] is true and returns them in store order. With patient unset, it
// returns once a quorum of the stores succeeded and a store timeout has
// passed (whichever comes last), and the outcomes still to come are
// errAnswering: a release that a quorum applied is a success, and a store
// that answers in time is released before the caller goes on, but a
// paused or slow store (or one that answers past its calls' deadlines)
// does not hold the caller up.
func (m *MultiLocker) collect(results <-chan storeResult, wait []bool, patient bool) []error {
	errs := make([]error, len(m.stores))
	left, ok := 0, 0
	for i, w := range wait {
		if w {
			errs[i] = errAnswering
			left++
		}
	}
	var late <-chan time.Time
	if !patient {
		t := time.NewTimer(m.storeTimeout)
		defer t.Stop()
		late = t.C
	}
	passed := false // a store timeout has passed (not patient)
	for left > 0 {
		select {
		case r := <-results:
			if !wait[r.i] {
				continue // another store's, not waited for
			}
			if errs[r.i] = r.err; r.err == nil {
				ok++
			}
			left--
		case <-late:
			passed, late = true, nil
		}
		if passed && m.quorum.Met(ok, len(m.stores)) {
			return errs
		}
	}
	return errs
}

// releaseLater releases c's token in the background on store i, whose
// release failed, or found nothing where ambiguous says an acquisition
// may yet land there (see core.later): until it releases, or, unless
// ambiguous, finds nothing.
func (m *MultiLocker) releaseLater(ctx context.Context, op string, c Call, i int, ambiguous bool) {
	m.later(ctx, func(ctx context.Context) bool {
		results := make(chan storeResult, 1)
		m.releaseOn(ctx, op, i, c, false, ambiguous, results)
		err := (<-results).err
		if err == nil {
			m.releasedLater(c, i)
		}
		return err == nil || (!ambiguous && isOutcome(err))
	})
}

// storeResult is the outcome of one store's call.
type storeResult struct {
	i   int
	err error
}

func fill(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// fanoutFunc runs f, the storeOp of operation op, on every store of m
// concurrently, each within the store timeout, and returns their answers
// and errors in store order once every store answered or a store timeout
// has passed: a store still answering then (one that ignores its
// context's deadline) counts as timed out, and its answer, when it comes,
// is dropped. It is for the calls a Starter cannot start (Exists).
func fanoutFunc[T any](ctx context.Context, m *MultiLocker, op, resource, storeOp string, f func(context.Context, storeRef) (T, error)) ([]T, []error) {
	type answer struct {
		i   int
		v   T
		err error
	}
	n := len(m.stores)
	answers := make(chan answer, n) // never blocks a late store's goroutine
	for i := range m.stores {
		go func() {
			t0 := m.obs.start()
			sctx, cancel := context.WithTimeout(ctx, m.storeTimeout)
			v, err := f(sctx, m.stores[i])
			err = m.storeTimedOut(ctx, sctx, err)
			cancel()
			m.obs.storeCall(ctx, op, resource, &m.stores[i], storeOp, t0, err)
			answers <- answer{i, v, err}
		}()
	}
	vals, errs := make([]T, n), make([]error, n)
	answered := make([]bool, n)
	late := time.NewTimer(m.storeTimeout)
	defer late.Stop()
	for left := n; left > 0; left-- {
		select {
		case a := <-answers:
			vals[a.i], errs[a.i], answered[a.i] = a.v, a.err, true
		case <-late.C:
			for i := range errs {
				if !answered[i] {
					errs[i] = timeoutError{after: m.storeTimeout.String()}
				}
			}
			return vals, errs
		}
	}
	return vals, errs
}
