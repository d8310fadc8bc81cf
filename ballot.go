package lock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// A Redlock lock's life, from its attempt to its release: everything a
// safety review needs is in this file.
//
// Attempt. An attempt sends the same resource and a fresh token to every
// store at once (MultiLocker.attempt) and counts their answers in a
// ballot. The ballot decides as soon as the quorum is met or can no longer
// be met, and outlives the attempt: stores may still answer after it
// decided. A failed attempt is reported once the kind of failure can no
// longer change (contention, when refusals alone rule the quorum out; a
// store failure, when the quorum is missed even if every store still
// answering refuses), without waiting for the other stores.
//
// Release. A store may hold the token if it granted it, if its answer was
// an error (the acquisition may have been applied, its answer lost), or if
// the background work below asked it; a store that refused holds nothing
// of it. The release asks every store that may hold the token — the
// stores still answering once they have answered, since a release sent
// earlier could overtake their acquisition, find nothing, and leave them
// holding the lock until its TTL runs out. A failed attempt waits for the
// releases of the stores that had answered when it was decided (bounded
// by the store timeout) and leaves the others to the background. A release
// that fails, or that finds nothing after an acquisition whose outcome was
// unknown (it may still land: a request already on its way when its
// caller gave up), is tried again in the background (core.later).
//
// Grant and background work. A granted lock is recorded in the held set
// with its ballot while stores are still answering or background work
// goes on. A lock granted by a bare quorum has fewer votes than it could:
// one more store loss drops it below quorum while its holder relies on
// it. Extend repairs missing votes (MultiLocker.repair), but a lock that
// is never extended would keep its reduced redundancy for its whole TTL.
// So, once every store has answered the attempt, the stores that did not
// grant it are asked again in the background, under the same token, for
// the TTL the granting stores have left: those that failed, and those that
// refused because a competing attempt held them (it releases them once it
// fails, so the lock climbs above a bare majority). At most backfillTries
// rounds, a store timeout apart, only while the lock is valid, and on
// timers: no goroutine waits between rounds. A store that failed and then
// refuses is done (another owner, or this lock's own earlier write whose
// answer was lost); a store that refused is asked until the tries are
// spent. Stores whose call ended because the caller's context did are not
// asked again: a caller that gives up wants no more calls made for it.
//
// This is safe for the same reason repair is: while a quorum holds the
// lock, no other owner can hold a quorum, and a store that another owner
// holds refuses (SET NX semantics).
//
// Unlock and Extend first halt the background work and wait for the calls
// under way (each bounded by the store timeout), so that none overtakes a
// release or an extension.

// ballot is one attempt's answers and, if it granted the lock, the lock's
// background work. Everything after mu is guarded by it.
type ballot struct {
	m        *MultiLocker
	resource string
	token    string
	stop     context.CancelFunc // ends the attempt's store context

	mu                       sync.Mutex
	votes                    []error // store i's answer, once answered[i]
	answered                 []bool
	mayHold                  []bool // store i may hold the token (see the top of this file)
	ambiguous                []bool // an acquisition on store i failed: it may yet land
	granted, refused, failed int
	received                 int
	decided, met, ready      bool
	atDecision               [3]int                 // granted, refused, failed when it decided
	onAnswer                 func(i int, err error) // set once a release began; called with mu held
	lock                     *grant                 // set once the attempt granted the lock
	readyc                   chan struct{}          // closed once decided and, for a failure, its kind certain
	done                     chan struct{}          // closed once every store answered
}

func newBallot(m *MultiLocker, resource, token string, stop context.CancelFunc) *ballot {
	n := len(m.stores)
	return &ballot{
		m: m, resource: resource, token: token, stop: stop,
		votes: make([]error, n), answered: make([]bool, n),
		mayHold: make([]bool, n), ambiguous: make([]bool, n),
		readyc: make(chan struct{}), done: make(chan struct{}),
	}
}

// cast counts store i's answer.
func (b *ballot) cast(i int, err error) {
	n, q := len(b.m.stores), b.m.quorum
	b.mu.Lock()
	b.votes[i], b.answered[i] = err, true
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
	if !b.decided {
		b.met = q.Met(b.granted, n)
		if b.met || !q.Met(n-b.refused-b.failed, n) {
			b.decided = true
			b.atDecision = [3]int{b.granted, b.refused, b.failed}
		}
	}
	// A failure's kind is certain once refusals alone rule the quorum out,
	// or once it is missed even if every store still answering refuses.
	pending := n - b.received
	if b.decided && !b.ready && (b.met || !q.Met(n-b.refused, n) || q.Met(n-b.refused-pending, n)) {
		b.ready = true
		close(b.readyc)
	}
	if b.onAnswer != nil {
		// Under mu, so that every late answer is handled before done
		// closes (onAnswer must not wait for anything that takes mu).
		b.onAnswer(i, err)
	}
	last := b.received == n
	if last && b.lock != nil {
		b.lock.schedule(b)
	}
	b.mu.Unlock()
	if last {
		b.stop()
		close(b.done)
	}
}

// outcome waits until the attempt is decided and, if it failed, the kind
// of failure certain; it returns whether the quorum was met and the counts
// it decided on.
func (b *ballot) outcome() (met bool, counts [3]int) {
	<-b.readyc
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.met, b.atDecision
}

// failures returns the stores that answered other than with a grant, and
// the counts of refusals and failures. Called with mu held.
func (b *ballot) failures() []StoreError {
	var out []StoreError
	for i, err := range b.votes {
		if b.answered[i] && err != nil {
			out = append(out, b.m.storeError(i, err))
		}
	}
	return out
}

// storeResult is the outcome of one store's release.
type storeResult struct {
	i   int
	err error
}

// release starts releasing the token on every store that may hold it (see
// the top of this file) and returns a channel on which each store's
// outcome arrives once — ErrNotHeld, without a call, for a store that
// cannot hold it — and which stores had answered the attempt when it
// began. It returns a nil channel if a release of the token is under way
// already.
func (b *ballot) release(ctx context.Context, op string) (results <-chan storeResult, answered []bool) {
	m := b.m
	c := Call{Op: CallRelease, Resource: b.resource, Token: b.token}
	out := make(chan storeResult, len(m.stores))
	releaseOne := func(i int, mayHold, ambiguous bool) {
		if !mayHold {
			out <- storeResult{i, ErrNotHeld}
			return
		}
		m.releaseOn(ctx, op, i, c, func(i int, err error) {
			if err != nil && (!isOutcome(err) || ambiguous) {
				m.releaseLater(ctx, op, c, []int{i})
			}
			out <- storeResult{i, err}
		})
	}
	b.mu.Lock()
	if b.onAnswer != nil {
		b.mu.Unlock()
		return nil, nil
	}
	b.onAnswer = func(i int, err error) { releaseOne(i, b.mayHold[i], b.ambiguous[i]) }
	answered = slices.Clone(b.answered)
	mayHold, ambiguous := slices.Clone(b.mayHold), slices.Clone(b.ambiguous)
	b.mu.Unlock()
	for i, ok := range answered {
		if ok {
			releaseOne(i, mayHold[i], ambiguous[i])
		}
	}
	return out, answered
}

// releaseAll releases the token on every store that may hold it, waiting
// for the stores still answering, and returns the stores' errors in store
// order. If a release is under way already (a concurrent Unlock), it waits
// for every answer and asks every store.
func (b *ballot) releaseAll(ctx context.Context, op string) []error {
	errs := make([]error, len(b.m.stores))
	results, _ := b.release(ctx, op)
	if results == nil {
		select {
		case <-b.done:
		case <-ctx.Done():
			return fill(errs, ctxErr(ctx))
		}
		return b.m.releaseAll(ctx, op, Call{Op: CallRelease, Resource: b.resource, Token: b.token}, nil)
	}
	for range errs {
		r := <-results
		errs[r.i] = r.err
	}
	return errs
}

// releaseFailed releases what a failed attempt may hold, and waits for the
// releases of the stores that had answered (the others are released in the
// background once they answer).
func (b *ballot) releaseFailed(ctx context.Context, op string) {
	results, answered := b.release(ctx, op)
	left := 0
	for _, ok := range answered {
		if ok {
			left++
		}
	}
	for ; left > 0; left-- {
		for r := range results {
			if answered[r.i] {
				break
			}
		}
	}
}

func fill(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
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
	halted  bool // Unlock or Extend came: make no further round
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
		if err != nil && !errors.Is(err, ErrNotHeld) && !caller {
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
	g.busy = make(chan struct{})
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
		case err == nil, errors.Is(err, ErrNotHeld):
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
	g.busy = nil
	if !g.halted && len(g.todo) > 0 && g.tries < backfillTries {
		g.round.Reset(m.storeTimeout)
	}
}

// settle waits until every store has answered the acquisition (see the
// top of this file) and halts the background work, waiting for the calls
// under way. Extend calls it first.
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
