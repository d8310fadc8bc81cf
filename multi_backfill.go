package lock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Background retries of a granted multi-store lock ("backfill").
//
// A MultiLocker grants a lock as soon as a quorum of stores has granted
// it. A store that failed meanwhile (a timeout, a reset connection) holds
// nothing, so the lock has fewer votes than it could: with 3 of 5, one
// more store loss drops it below quorum while its holder still relies on
// it. Extend repairs missing votes (see repair), but a lock that is never
// extended would keep its reduced redundancy for its whole TTL. So, once
// every store has answered the attempt, the stores that failed — before
// the quorum was met, or while still answering after — are asked again in
// the background, under the same token, for the TTL the granting stores
// have left: at most backfillTries times, a store timeout apart, and only
// while the lock is valid. The background work exists only when some
// store failed: a lock granted by stores that all answered pays nothing.
//
// This is safe for the same reason repair is: while a quorum holds the
// lock, no other owner can hold a quorum, and a store that another owner
// took in the meantime refuses (its refusal, like any refusal, ends the
// retries on that store). Stores that refused during the attempt are held
// by another owner and are not asked again.
//
// Stores whose call ended because the caller's context did are not asked
// again: a caller that gives up wants no more calls made for it.
//
// The work is tracked with the lock's ballot (heldEntry.pending): Unlock
// and Extend first stop it — no new retry starts — and wait for the calls
// under way, each bounded by the store timeout, so no retry can overtake
// a release or an extension, and no goroutine outlives an Unlock, nor the
// lock's validity.

// backfillTries bounds the background retries of each failed store.
const backfillTries = 2

// grant is a granted lock's part of its ballot: what the background
// retries need. Its fields after m are guarded by the ballot's mu.
type grant struct {
	m      *MultiLocker
	ctx    context.Context // the caller's, to tell its cancellation from a store failure
	op     string
	lock   Lock
	expiry time.Time     // when the lock expires on the stores that granted it
	work   *pendingVotes // the retries, once started
	halted bool          // Unlock or Extend came: start none
}

// pendingVotes is the background work on a granted lock.
type pendingVotes struct {
	done     chan struct{} // closed once the work has ended
	stop     chan struct{} // closed to start no further retry
	stopOnce sync.Once
}

// halt makes the work start no further retry.
func (p *pendingVotes) halt() { p.stopOnce.Do(func() { close(p.stop) }) }

// grant records that the attempt of ballot b granted l, which expires on
// the stores at expiry, and returns the ballot if Unlock and Extend must
// wait for it: stores are still answering, or the background retries of
// failed stores have started. It returns nil when every store answered and
// none failed.
func (m *MultiLocker) grant(ctx context.Context, op string, l Lock, expiry time.Time, b *ballot) *ballot {
	b.mu.Lock()
	g := &grant{m: m, ctx: ctx, op: op, lock: l, expiry: expiry}
	b.grantedLock = g
	var backfill func()
	allIn := b.received == b.n
	if allIn {
		backfill = g.startLocked(b)
	}
	b.mu.Unlock()
	if backfill == nil {
		if allIn {
			return nil
		}
		return b // the last answer may start the retries (see cast)
	}
	backfill()
	return b
}

// retryable reports whether a store that answered err is worth asking
// again.
func (g *grant) retryable(err error) bool {
	return err != nil && !isOutcome(err) && !(g.ctx.Err() != nil && errors.Is(err, g.ctx.Err()))
}

// startLocked, called with b.mu held once every store answered, prepares
// the background retries of the stores that failed and returns the
// function that starts them, or nil if there are none to make.
func (g *grant) startLocked(b *ballot) func() {
	if g.halted || g.work != nil {
		return nil
	}
	var failed []int
	for i, err := range b.errs {
		if g.retryable(err) {
			failed = append(failed, i)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	p := &pendingVotes{done: make(chan struct{}), stop: make(chan struct{})}
	g.work = p
	return func() {
		go func() {
			defer close(p.done)
			// The caller's Lock call has returned: its context no longer
			// bounds the work, the lock's validity does.
			g.m.retryFailed(context.WithoutCancel(g.ctx), g.op, g.lock, g.expiry, failed, p.stop)
		}()
	}
}

// haltBackfill stops the background retries on the lock of ballot b, if
// any, and waits for the calls under way; Unlock and Extend call it first.
func (b *ballot) haltBackfill(ctx context.Context, op string, l Lock) error {
	b.mu.Lock()
	var p *pendingVotes
	if g := b.grantedLock; g != nil {
		g.halted = true
		p = g.work
	}
	b.mu.Unlock()
	if p == nil {
		return nil
	}
	p.halt()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return &Error{Op: op, Resource: l.Resource, Err: ctxErr(ctx)}
	}
}

// retryFailed asks the failed stores again for l, until they answer, the
// tries are spent, stop closes, or l's validity is nearly over. expiry is
// when the lock expires on the stores that granted it.
func (m *MultiLocker) retryFailed(ctx context.Context, op string, l Lock, expiry time.Time, failed []int, stop <-chan struct{}) {
	for try := 0; try < backfillTries && len(failed) > 0; try++ {
		// A store that has just failed seldom answers at once.
		t := time.NewTimer(m.storeTimeout)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
		remaining := time.Until(expiry)
		if remaining <= m.storeTimeout || time.Until(l.ValidUntil) <= m.storeTimeout {
			return // too late to be of use
		}
		c := Call{Op: CallAcquire, Resource: l.Resource, Token: l.Token, TTL: remaining}
		asked := make(map[int]bool, len(failed))
		for _, i := range failed {
			asked[i] = true
		}
		errs := m.fanout(ctx, op, c, func(i int) bool { return asked[i] })
		still := failed[:0]
		for _, i := range failed {
			// Granted, or refused (another owner, or this lock's own
			// earlier write whose answer was lost): either way, done.
			if err := errs[i]; err != nil && !errors.Is(err, ErrNotAcquired) && !errors.Is(err, ErrNotHeld) {
				still = append(still, i)
			}
		}
		failed = still
	}
}
