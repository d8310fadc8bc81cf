package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// A Redlock lock's life, from its attempt to its release: what a safety
// review needs is in this file.
//
// Attempt. MultiLocker.attempt sends the resource and a fresh token to
// every store at once; a ballot counts the answers. It decides as soon as
// the quorum is met or can no longer be met, and outlives the attempt:
// stores may answer after it decided. A failure is reported once its kind
// can no longer change: contention, when refusals alone rule the quorum
// out; store failures, when the quorum is missed even if every store
// still answering refuses.
//
// Fence. Each store answers a fenced acquisition with a fence above every
// fence it gave before for the resource. The lock's fence F is the largest
// among the stores that granted it when the quorum was met, and the lock
// is granted only once a quorum of the granting stores give fences above
// F from then on: those that answered F do, the others are raised to F
// (FenceRaiser). A later lock is granted by a quorum, which shares a store
// s with that one; this lock held s from before s was raised (or answered
// F) until it was released or expired, and the later lock took s only
// after that, so s gave it a fence above F, and so did its quorum. No
// clock is involved. Only granting stores count: a store that refused was
// held by another attempt, which may have taken it before the raise. The
// other stores are raised in the background, so that the stores' fences
// stay equal and the next lock seldom needs a raise before it is granted.
//
// Release. A store may hold the token if it granted it, if its answer was
// an error (applied, its answer lost), or if the background work asked it;
// a store that refused holds nothing of it. A release asks every store
// that may hold the token, those still answering once they answered (a
// release sent earlier could overtake their acquisition and find
// nothing). A failed attempt waits for the releases of the stores that had
// answered in time, and leaves the others (those still answering, and those
// whose call ended at the store timeout) to the background. A release that
// fails, or finds nothing after an acquisition whose outcome was unknown
// (it may still land: a request on its way when its caller gave up), is
// tried again in the background (core.later).
//
// Background work. A lock granted by a bare quorum has fewer votes than it
// could: one more store loss drops it below quorum. Extend repairs missing
// votes (MultiLocker.repair), but a lock never extended would keep its
// reduced redundancy. So, once every store answered, the stores that did
// not grant the lock are asked again, under its token, for the TTL the
// granting stores have left: those that failed, and those that refused
// because a competing attempt held them (it releases them once it fails).
// At most backfillTries rounds, a store timeout apart, while the lock is
// valid, on timers (no goroutine waits between rounds). A store that
// failed and then refuses is done (another owner, or this lock's own
// earlier write); one that refused is asked until the tries are spent.
// Stores whose call ended because the caller's context did, and stores
// that refused the request itself (ErrInvalid: they refuse it again), are
// not asked again. It is safe for the reason repair is: while a quorum
// holds the lock, no other owner can, and a store another owner holds
// refuses.
// Unlock and Extend first halt this work and wait for the calls under way,
// so that none overtakes a release or an extension.

// ballot is one attempt's answers and, if it granted the lock, the lock's
// background work. Everything after mu is guarded by it.
type ballot struct {
	m        *MultiLocker
	ctx      context.Context // the caller's
	op       string
	resource string
	token    string
	stop     context.CancelFunc // ends the attempt's store context

	mu                       sync.Mutex
	votes                    []error  // store i's answer, once answered[i]
	fences                   []uint64 // store i's fence, if it granted a fenced acquisition
	raiseErrs                []error  // why granting store i could not be raised to F; nil until one could not
	answered                 []bool
	mayHold                  []bool // store i may hold the token
	ambiguous                []bool // an acquisition on store i failed: it may yet land
	granted, refused, failed int
	received                 int
	decided, met, ready      bool
	atDecision               [3]int                 // granted, refused, failed when it decided (a failure: once its kind was certain)
	fence                    uint64                 // F, once the quorum is met
	established, raising     int                    // granting stores above F, and raises under way
	unfenced                 bool                   // met, but F could not be established
	onAnswer                 func(i int, err error) // set once a release began; called with mu held
	lock                     *grant                 // set once the attempt granted the lock
	readyc                   chan struct{}          // closed by checkReady
	done                     chan struct{}          // closed once every store answered
}

func newBallot(ctx context.Context, m *MultiLocker, op, resource, token string, stop context.CancelFunc) *ballot {
	n := len(m.stores)
	return &ballot{
		m: m, ctx: ctx, op: op, resource: resource, token: token, stop: stop,
		votes: make([]error, n), fences: make([]uint64, n), answered: make([]bool, n),
		mayHold: make([]bool, n), ambiguous: make([]bool, n),
		readyc: make(chan struct{}), done: make(chan struct{}),
	}
}

// cast counts store i's answer.
func (b *ballot) cast(i int, fence uint64, err error) {
	n, q := len(b.m.stores), b.m.quorum
	b.mu.Lock()
	b.votes[i], b.fences[i], b.answered[i] = err, fence, true
	b.received++
	switch {
	case err == nil:
		b.granted++
		b.mayHold[i] = true
	case errors.Is(err, ErrNotAcquired):
		b.refused++
	default:
		b.failed++
		b.mayHold[i], b.ambiguous[i] = true, true
	}
	var raise []int
	switch {
	case !b.decided:
		b.met = q.Met(b.granted, n)
		if b.met || !q.Met(n-b.refused-b.failed, n) {
			b.decided = true
			b.atDecision = [3]int{b.granted, b.refused, b.failed}
		}
		if b.met && b.m.fenced {
			for j, ok := range b.answered {
				if ok && b.votes[j] == nil {
					b.fence = max(b.fence, b.fences[j])
				}
			}
			for j, ok := range b.answered {
				if ok && b.placeFence(j) {
					raise = append(raise, j)
				}
			}
		}
	case b.met && b.m.fenced && b.placeFence(i):
		raise = append(raise, i)
	}
	b.checkReady()
	if b.onAnswer != nil {
		b.onAnswer(i, err) // under mu, so that every late answer is handled before done closes
	}
	last := b.received == n
	if last && b.lock != nil {
		b.lock.schedule(b)
	}
	f := b.fence
	b.mu.Unlock()
	for _, j := range raise {
		b.raise(j, f)
	}
	if last {
		b.stop()
		close(b.done)
	}
}

// checkReady wakes the attempt once it is decided and, if the quorum was
// met, its fence established; for a failure, once its kind is certain.
// Called with mu held.
func (b *ballot) checkReady() {
	n, q := len(b.m.stores), b.m.quorum
	pending := n - b.received
	switch {
	case !b.decided || b.ready:
		return
	case b.met && b.m.fenced && !q.Met(b.established, n):
		if q.Met(b.established+b.raising+pending, n) {
			return // raises under way, or stores still answering, may do it
		}
		b.met, b.unfenced = false, true
	case !b.met && q.Met(n-b.refused, n) && !q.Met(n-b.refused-pending, n):
		return
	}
	if !b.met {
		// A failure is decided on the answers that made its kind
		// certain: the hook's EventQuorum says what the attempt ends with.
		b.atDecision = [3]int{b.granted, b.refused, b.failed}
	}
	b.ready = true
	close(b.readyc)
}

// placeFence counts store i toward the quorum that established F, or
// reports that it must be raised. Called with mu held.
func (b *ballot) placeFence(i int) (raise bool) {
	switch {
	case b.votes[i] == nil && b.fences[i] >= b.fence:
		b.established++
		return false
	case b.votes[i] == nil:
		b.raising++
		return true
	}
	// A store that refused, raised to keep the stores' fences equal; not
	// one that failed (likely to fail again), nor for a caller who gave up.
	return errors.Is(b.votes[i], ErrNotAcquired) && b.ctx.Err() == nil
}

// raise raises store i's fences to f: for a granting store, to establish
// the lock's fence; for one that refused, to keep the stores' fences equal.
func (b *ballot) raise(i int, f uint64) {
	ctx := context.WithoutCancel(b.ctx)
	rctx, cancel := context.WithTimeout(ctx, b.m.storeTimeout)
	c := Call{Op: CallRaiseFence, Resource: b.resource, Fence: f}
	b.m.start(ctx, rctx, b.op, i, c, func(i int, _ uint64, err error) {
		cancel()
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.votes[i] == nil {
			b.raising--
			if err == nil {
				b.established++
			} else {
				if b.raiseErrs == nil {
					b.raiseErrs = make([]error, len(b.votes))
				}
				b.raiseErrs[i] = fmt.Errorf("raising its fences to %d: %w", f, err)
			}
			b.checkReady()
		}
	})
}

// outcome waits until checkReady wakes the attempt; it returns whether
// the quorum was met (and its fence established), the lock's fence, and
// the counts the outcome was decided on.
func (b *ballot) outcome() (met bool, fence uint64, counts [3]int) {
	<-b.readyc
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.met, b.fence, b.atDecision
}

// failures returns the stores that answered other than with a grant, and
// those that granted it but could not be raised to the lock's fence.
// Called with mu held.
func (b *ballot) failures() []StoreError {
	var out []StoreError
	for i, err := range b.votes {
		switch {
		case b.answered[i] && err != nil:
			out = append(out, b.m.storeError(i, err))
		case b.answered[i] && b.raiseErrs != nil && b.raiseErrs[i] != nil:
			out = append(out, b.m.storeError(i, b.raiseErrs[i]))
		}
	}
	return out
}

// release releases the token on every store that may hold it, and returns
// the stores' errors in store order: ErrNotHeld, without a call, for a
// store that cannot hold it. With all set (Unlock) it waits for every
// store, or for a store timeout if a quorum released it by then (see
// collect); otherwise (a failed attempt) for the stores that had answered
// the attempt in time. The other stores are released in the background
// once they answer. A second release of the token (a concurrent Unlock)
// waits for every answer and asks every store.
func (b *ballot) release(ctx context.Context, op string, all bool) []error {
	m := b.m
	c := Call{Op: CallRelease, Resource: b.resource, Token: b.token}
	results := make(chan storeResult, len(m.stores))
	releaseOne := func(i int, mayHold, ambiguous bool) {
		if !mayHold {
			results <- storeResult{i, ErrNotHeld}
			return
		}
		m.releaseOn(ctx, op, i, c, true, ambiguous, results)
	}
	b.mu.Lock()
	if b.onAnswer != nil {
		b.mu.Unlock()
		select {
		case <-b.done:
		case <-ctx.Done():
			return fill(make([]error, len(m.stores)), ctxErr(ctx))
		}
		return m.releaseAll(ctx, op, c, nil, true, false)
	}
	b.onAnswer = func(i int, _ error) { releaseOne(i, b.mayHold[i], b.ambiguous[i]) }
	answered := slices.Clone(b.answered)
	mayHold, ambiguous := slices.Clone(b.mayHold), slices.Clone(b.ambiguous)
	// A failed attempt does not wait for a store that did not answer it in
	// time: its release would most likely hold the caller up for another
	// store timeout. It goes on in the background.
	wait := make([]bool, len(answered))
	for i, ok := range answered {
		wait[i] = all || ok && !errors.As(b.votes[i], new(timeoutError))
	}
	b.mu.Unlock()
	for i, ok := range answered {
		if ok {
			releaseOne(i, mayHold[i], ambiguous[i])
		}
	}
	return m.collect(results, wait, !all)
}

// backfillTries bounds the background rounds of a granted lock.
const backfillTries = 2

// grant is a granted lock's part of its ballot: its background work.
type grant struct {
	ctx     context.Context // the caller's, to tell its cancellation from a store failure
	op      string
	lock    Lock
	expiry  time.Time   // when the lock expires on the stores that granted it
	refused []bool      // store i refused during the attempt
	todo    []int       // the stores to ask in the next round
	tries   int         // rounds made
	round   *time.Timer // the next round, once set
	busy    chan struct{}
	flight  []int // the stores asked in the round under way, while busy
	halted  bool  // Unlock or Extend came: make no further round
}

// grant records that the attempt granted l, which expires on the stores at
// expiry, and reports whether Unlock and Extend must wait for the ballot:
// stores are still answering, or background work is set.
func (b *ballot) grant(ctx context.Context, op string, l Lock, expiry time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lock = &grant{ctx: ctx, op: op, lock: l, expiry: expiry}
	if b.received < len(b.m.stores) {
		return true // the last answer schedules the work (see cast)
	}
	return b.lock.schedule(b)
}

// schedule sets the first background round, once every store answered,
// if some store did not grant the lock, and reports whether it did.
// Called with b.mu held.
func (g *grant) schedule(b *ballot) bool {
	if g.halted || g.round != nil {
		return false
	}
	g.refused = make([]bool, len(b.votes))
	for i, err := range b.votes {
		g.refused[i] = errors.Is(err, ErrNotAcquired)
		caller := g.ctx.Err() != nil && errors.Is(err, g.ctx.Err())
		// A store that refused the request itself (ErrInvalid) refuses
		// it again: it is not asked again.
		if err != nil && !errors.Is(err, ErrNotHeld) && !errors.Is(err, ErrInvalid) && !caller {
			g.todo = append(g.todo, i)
		}
	}
	if len(g.todo) == 0 {
		return false
	}
	g.round = time.AfterFunc(b.m.storeTimeout, b.backfill)
	return true
}

// backfill is one background round: it asks the stores to do for the lock,
// under its token, for the TTL the granting stores have left, and sets the
// next round if stores are left and tries remain.
func (b *ballot) backfill() {
	m := b.m
	b.mu.Lock()
	g := b.lock
	remaining := time.Until(g.expiry)
	if g.halted || remaining <= m.storeTimeout || time.Until(g.lock.ValidUntil) <= m.storeTimeout {
		b.mu.Unlock()
		return // halted, or too late to be of use
	}
	todo := slices.Clone(g.todo)
	for _, i := range todo {
		b.mayHold[i] = true
	}
	g.busy, g.flight = make(chan struct{}), todo
	b.mu.Unlock()

	// The caller's Lock call has returned: its context no longer bounds
	// the work, the lock's validity does.
	c := Call{Op: CallAcquire, Resource: b.resource, Token: b.token, TTL: remaining}
	errs := m.fanout(context.WithoutCancel(g.ctx), g.op, c, func(i int) bool { return slices.Contains(todo, i) })

	b.mu.Lock()
	defer b.mu.Unlock()
	g.todo = g.todo[:0]
	for _, i := range todo {
		err := errs[i]
		switch {
		case err == nil, errors.Is(err, ErrNotHeld), errors.Is(err, ErrInvalid):
		case errors.Is(err, ErrNotAcquired):
			if g.refused[i] {
				g.todo = append(g.todo, i) // the competitor may still hold it
			}
		default:
			b.ambiguous[i] = true
			g.todo = append(g.todo, i)
		}
	}
	g.tries++
	close(g.busy)
	g.busy, g.flight = nil, nil
	if !g.halted && len(g.todo) > 0 && g.tries < backfillTries {
		g.round.Reset(m.storeTimeout)
	}
}

// releaseLater releases the token in the background (see
// MultiLocker.releaseLater) on every store that may hold it: for an
// Unlock whose context ended while it waited for the background work
// (halt). An acquisition of the round under way may yet land: those
// stores are asked until they release.
func (b *ballot) releaseLater(ctx context.Context, op string) {
	c := Call{Op: CallRelease, Resource: b.resource, Token: b.token}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, may := range b.mayHold {
		if may {
			inFlight := b.lock != nil && slices.Contains(b.lock.flight, i)
			b.m.releaseLater(ctx, op, c, i, b.ambiguous[i] || inFlight)
		}
	}
}

// settle waits until every store has answered the acquisition and halts
// the background work; Extend calls it first.
func (b *ballot) settle(ctx context.Context, op string) error {
	select {
	case <-b.done:
	case <-ctx.Done():
		return &Error{Op: op, Resource: b.resource, Err: ctxErr(ctx)}
	}
	return b.halt(ctx, op)
}

// halt stops the background work, if any, and waits for the calls under
// way; Unlock and Extend call it first.
func (b *ballot) halt(ctx context.Context, op string) error {
	b.mu.Lock()
	var busy chan struct{}
	if g := b.lock; g != nil {
		g.halted = true
		if g.round != nil {
			g.round.Stop()
		}
		busy = g.busy
	}
	b.mu.Unlock()
	if busy == nil {
		return nil
	}
	select {
	case <-busy:
		return nil
	case <-ctx.Done():
		return &Error{Op: op, Resource: b.resource, Err: ctxErr(ctx)}
	}
}
