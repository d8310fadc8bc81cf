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
// the lock is granted, the stores that failed — during the attempt, or
// while still answering after the quorum was met — are asked again in the
// background, under the same token, for the TTL the granting stores have
// left: at most backfillTries times, a store timeout apart, and only
// while the lock is valid.
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
// The work is tracked with the lock (heldEntry.pending): Unlock and
// Extend first stop it — no new retry starts — and wait for the calls
// under way, each bounded by the store timeout, so no retry can overtake
// a release or an extension, and no goroutine outlives an Unlock, nor the
// lock's validity.

// backfillTries bounds the background retries of each failed store.
const backfillTries = 2

// pendingVotes is the background work on a granted lock: the answers of
// the stores still due when the quorum was met, then the retries of the
// stores that failed.
type pendingVotes struct {
	done     chan struct{} // closed once the work has ended
	stop     chan struct{} // closed to start no further retry
	stopOnce sync.Once
}

// halt makes the work start no further retry.
func (p *pendingVotes) halt() { p.stopOnce.Do(func() { close(p.stop) }) }

// backfill starts the background work on l, granted by an attempt that
// began at start with ttl, whose ballot b still expects the votes of n −
// received stores, and whose answers so far include failures. It returns
// nil when there is nothing to do: every store answered and none failed.
func (m *MultiLocker) backfill(ctx context.Context, op string, l Lock, start time.Time, ttl time.Duration, b *ballot, received int, failures []StoreError) *pendingVotes {
	retry := func(err error) bool {
		return err != nil && !isOutcome(err) && !(ctx.Err() != nil && errors.Is(err, ctx.Err()))
	}
	var failed []int
	for _, f := range failures {
		if retry(f.Err) {
			failed = append(failed, f.Index)
		}
	}
	left := len(m.stores) - received
	if left == 0 && len(failed) == 0 {
		return nil
	}
	p := &pendingVotes{done: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		defer close(p.done)
		for ; left > 0; left-- {
			if v := <-b.votes; retry(v.err) {
				failed = append(failed, v.i)
			}
		}
		// The caller's Lock call has returned: its context no longer
		// bounds the work, the lock's validity does.
		m.retryFailed(context.WithoutCancel(ctx), op, l, start.Add(ttl), failed, p.stop)
	}()
	return p
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
		errs := make([]error, len(failed))
		var wg sync.WaitGroup
		for k, i := range failed {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[k] = m.call(ctx, op, l.Resource, "acquire", i, func(ctx context.Context, s storeRef) error {
					return s.Acquire(ctx, l.Resource, l.Token, remaining)
				})
			}()
		}
		wg.Wait()
		still := failed[:0]
		for k, i := range failed {
			// Granted, or refused (another owner, or this lock's own
			// earlier write whose answer was lost): either way, done.
			if err := errs[k]; err != nil && !errors.Is(err, ErrNotAcquired) && !errors.Is(err, ErrNotHeld) {
				still = append(still, i)
			}
		}
		failed = still
	}
}
