package lock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// A Redlock lock's life, from its attempt to its release.
//
// An attempt sends the same resource and a fresh token to every store at
// once (see MultiLocker.attempt) and counts their answers in a ballot. The
// ballot decides as soon as the quorum is met or can no longer be met, and
// outlives the attempt: stores may still answer after it decided.
//
// A failed attempt releases the token on every store that granted it or
// whose answer was an error (it may have applied the acquisition), and on
// the stores still answering once they answer; stores that refused hold
// nothing of the token. See release.
//
// A granted lock is recorded in the held set with its ballot while stores
// are still answering, or while background work on it goes on: the stores
// that failed are asked again ("backfill"). Unlock and Extend first stop
// that work and wait for the calls under way, and release (or extend)
// stores still answering only once they have answered: a release sent
// earlier could overtake a slow store's acquisition, find nothing, and
// leave that store holding the lock until its TTL runs out.
//
// Backfill. A lock granted by a bare quorum, while other stores failed (a
// timeout, a reset connection), has fewer votes than it could: one more
// store loss drops it below quorum while its holder still relies on it.
// Extend repairs missing votes (see MultiLocker.repair), but a lock that is
// never extended would keep its reduced redundancy for its whole TTL. So,
// once every store has answered the attempt, the stores that failed are
// asked again in the background, under the same token, for the TTL the
// granting stores have left: at most backfillTries times, a store timeout
// apart, and only while the lock is valid. The work exists only when some
// store failed: a lock granted by stores that all answered pays nothing.
//
// This is safe for the same reason repair is: while a quorum holds the
// lock, no other owner can hold a quorum, and a store that another owner
// took in the meantime refuses (its refusal, like any refusal, ends the
// retries on that store). Stores that refused during the attempt are held
// by another owner and are not asked again. Stores whose call ended
// because the caller's context did are not asked again either: a caller
// that gives up wants no more calls made for it.

// ballot collects the answers of the stores to one attempt. It decides
// as soon as the quorum is met or can no longer be met, and wakes the
// caller then, once: the stores' answers are counted on whatever
// goroutine delivers them.
type ballot struct {
	m        *MultiLocker
	resource string
	token    string
	stop     context.CancelFunc // ends the attempt's store context

	mu                       sync.Mutex
	errs                     []error
	answered                 []bool
	granted, refused, failed int
	received                 int
	decided, met             bool
	atDecision               [3]int                 // granted, refused, failed when it decided
	onAnswer                 func(i int, err error) // for the answers still to come, once a release began; called with mu held
	lock                     *grant                 // set once the attempt granted the lock
	decision                 chan struct{}          // closed once decided
	done                     chan struct{}          // closed once every store answered
}

func newBallot(m *MultiLocker, resource, token string, stop context.CancelFunc) *ballot {
	n := len(m.stores)
	return &ballot{
		m: m, resource: resource, token: token, stop: stop,
		errs: make([]error, n), answered: make([]bool, n),
		decision: make(chan struct{}), done: make(chan struct{}),
	}
}

// cast counts store i's answer.
func (b *ballot) cast(i int, err error) {
	n, q := len(b.m.stores), b.m.quorum
	b.mu.Lock()
	b.errs[i], b.answered[i] = err, true
	b.received++
	switch {
	case err == nil:
		b.granted++
	case errors.Is(err, ErrNotAcquired):
		b.refused++
	default:
		b.failed++
	}
	if !b.decided {
		b.met = q.Met(b.granted, n)
		if b.met || !q.Met(n-b.refused-b.failed, n) {
			b.decided = true
			b.atDecision = [3]int{b.granted, b.refused, b.failed}
			close(b.decision)
		}
	}
	if b.onAnswer != nil {
		// Under mu, so that every late answer is handled before done
		// closes (onAnswer must not wait for anything that takes mu).
		b.onAnswer(i, err)
	}
	last := b.received == n
	var backfill func()
	if last && b.lock != nil {
		backfill = b.lock.startLocked(b)
	}
	b.mu.Unlock()
	if last {
		b.stop()
		close(b.done)
	}
	if backfill != nil {
		backfill()
	}
}

// outcome returns whether the quorum was met and the counts it decided
// on, once decided.
func (b *ballot) outcome() (met bool, counts [3]int) {
	<-b.decision
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.met, b.atDecision
}

// failures returns the stores that answered other than with a grant.
// Called with mu held.
func (b *ballot) failures() []StoreError {
	var out []StoreError
	for i, err := range b.errs {
		if b.answered[i] && err != nil {
			out = append(out, b.m.storeError(i, err))
		}
	}
	return out
}

// release releases the ballot's token on every store that may hold it and
// returns the stores' errors in store order: at once on the stores that
// answered the attempt, and on the stores still answering once they have
// answered (see releaseOn). Stores that refused the token hold nothing
// of it: their error is ErrNotHeld, without a call.
func (b *ballot) release(ctx context.Context, op string) []error {
	m := b.m
	n := len(m.stores)
	c := Call{Op: CallRelease, Resource: b.resource, Token: b.token}
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Add(n)
	release := func(i int, vote error) {
		if errors.Is(vote, ErrNotAcquired) {
			errs[i] = ErrNotHeld
			wg.Done()
			return
		}
		m.releaseOn(ctx, op, i, c, func(i int, err error) {
			errs[i] = err
			wg.Done()
		})
	}
	b.mu.Lock()
	if b.onAnswer != nil { // another release of the token is under way: wait for every answer
		b.mu.Unlock()
		select {
		case <-b.done:
		case <-ctx.Done():
			return fill(errs, ctxErr(ctx))
		}
		return m.releaseAll(ctx, op, c, nil)
	}
	b.onAnswer = release
	answered, votes := slices.Clone(b.answered), slices.Clone(b.errs)
	b.mu.Unlock()
	for i, ok := range answered {
		if ok {
			release(i, votes[i])
		}
	}
	wg.Wait()
	return errs
}

func fill(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// backfillTries bounds the background retries of each failed store.
const backfillTries = 2

// grant is a granted lock's part of its ballot: what the background
// retries need. Its fields after op are guarded by the ballot's mu.
type grant struct {
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

// grant records that the attempt granted l, which expires on the stores at
// expiry, and reports whether Unlock and Extend must wait for the ballot:
// stores are still answering, or the background retries of failed stores
// have started. It reports false when every store answered and none
// failed.
func (b *ballot) grant(ctx context.Context, op string, l Lock, expiry time.Time) bool {
	b.mu.Lock()
	g := &grant{ctx: ctx, op: op, lock: l, expiry: expiry}
	b.lock = g
	var backfill func()
	allIn := b.received == len(b.m.stores)
	if allIn {
		backfill = g.startLocked(b)
	}
	b.mu.Unlock()
	if backfill == nil {
		return !allIn // the last answer may start the retries (see cast)
	}
	backfill()
	return true
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
			b.m.retryFailed(context.WithoutCancel(g.ctx), g.op, g.lock, g.expiry, failed, p.stop)
		}()
	}
}

// settle waits until every store has answered the acquisition (see the
// top of this file) and stops the background retries, waiting for those
// under way. Extend calls it first.
func (b *ballot) settle(ctx context.Context, op string) error {
	select {
	case <-b.done:
	case <-ctx.Done():
		return &Error{Op: op, Resource: b.resource, Err: ctxErr(ctx)}
	}
	return b.haltBackfill(ctx, op)
}

// haltBackfill stops the background retries, if any, and waits for the
// calls under way; Unlock and Extend call it first.
func (b *ballot) haltBackfill(ctx context.Context, op string) error {
	b.mu.Lock()
	var p *pendingVotes
	if g := b.lock; g != nil {
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
		return &Error{Op: op, Resource: b.resource, Err: ctxErr(ctx)}
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
