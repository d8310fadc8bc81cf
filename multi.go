package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock/internal/inproc"
)

// MultiLocker takes each lock in several independent stores at once and
// holds it when a quorum of them granted it: the Redlock algorithm.
//
// Every attempt sends the same resource and a fresh token to all stores
// concurrently, each call bounded by Options.StoreTimeout, and decides as
// soon as the quorum is met or can no longer be met. The lock's validity is
// ttl − elapsed − drift, where drift = ttl×DriftFactor + 2ms + the largest
// TTL granularity among the stores; the lock is granted only if the quorum
// is met and validity remains. A failed attempt returns once the kind of
// failure is certain (contention or store failures), after releasing the
// lock on every store that answered in time and may hold it; the stores
// still answering are released in the background once they answer, and
// those whose call ended at the store timeout in the background too (so
// that a dead store costs an attempt one store timeout, not two).
//
// Once a lock is granted, the stores that did not grant it — those that
// failed (but not those that refused the request itself, ErrInvalid), and
// those that a competing attempt held — are asked again in the
// background, under the same token and for the TTL the others have left
// (twice at most, a store timeout apart, while the lock is valid), and
// each Extend re-takes the lock on stores that lost it: so the lock
// regains the redundancy it could have, and one more store loss does not
// drop it below quorum. Unlock and Extend first stop that work and wait
// for the calls under way. Unlock succeeds once a quorum released the
// lock; releases that failed are tried again in the background. The
// lifecycle is in ballot.go.
//
// That work belongs to the locker that acquired the lock, and ends with
// its process: a process that exits holding a lock it just took (a
// command-line tool, say) should Extend it first, which waits for every
// store's answer and leaves the lock on every store that can take it. A
// lock handed to another locker (see [Lock]) and released there while
// that work goes on — within a few store timeouts of the acquisition —
// may be taken again, under its token, on the stores still answering or
// asked again: on a minority of them, so nobody holds it and anyone can
// lock the resource, but those stores keep it until its TTL (IsLocked
// reports it held) unless the acquiring locker releases it too. So may a
// lock whose Unlock runs while an Extend of it is under way.
//
// When every store can raise fences ([FenceRaiser]) and Options.NoFence
// is off, each lock carries a fence above the fence of every earlier lock
// on the resource whose quorum it shares a store with — with a majority
// quorum, every earlier lock — with no clock of the locker's, as far as
// each store's own fences go (the Redis and memcached stores carry fences
// over a lost counter by a clock, and a raise carries one store's fence to
// the others, so their clocks must agree: docs/fencing.md): the largest
// fence the granting stores answered, established on a quorum of them
// before the lock is granted (see ballot.go). Once the stores' fences are
// equal, as the locker keeps them, that costs no extra round trip.
// Otherwise locks carry Fence 0. A raise that a grant needs runs to its
// answer or its store timeout whatever the caller's context does (an
// interrupted raise would leave the lock without its fence), so a Lock or
// TryLock may return up to two store timeouts after its context ends:
// the raise's, then the failed attempt's releases'.
//
// With a majority quorum, mutual exclusion survives the loss of a minority
// of the stores, provided stores that restart do not come back empty while
// a lock they granted is still valid, and clocks do not jump by more than
// the drift allowance.
//
// Make one with [NewMulti]: a zero MultiLocker refuses every call with an
// error matching [ErrInvalid].
type MultiLocker struct {
	core
	stores  []storeRef
	quorum  Quorum
	fenced  bool // every store is a FenceRaiser, and NoFence is off
	unlocks unlockLine
}

var _ Locker = (*MultiLocker)(nil)

// NewMulti returns a locker over stores, which must be distinct. A nil opts
// gives the defaults (majority quorum). It refuses, with ErrInvalid, a
// quorum that all the stores cannot meet, that half of them or fewer meet,
// or that is not monotonic (see [Quorum]).
func NewMulti(stores []Store, opts *Options) (*MultiLocker, error) {
	const op = "new"
	m := &MultiLocker{}
	if err := m.init(op, opts, m); err != nil {
		return nil, err
	}
	if len(stores) == 0 {
		return nil, invalidf(op, "", "no stores")
	}
	refs, err := m.resolve(op, stores, opts)
	if err != nil {
		return nil, err
	}
	q := defaultQuorum
	if opts != nil && opts.Quorum != nil {
		q = opts.Quorum
	}
	if err := checkQuorum(op, q, len(stores)); err != nil {
		return nil, err
	}
	m.stores, m.quorum = refs, q
	m.fenced = !m.noFence
	extenders := 0
	for _, s := range refs {
		_, raiser := s.Store.(FenceRaiser)
		m.fenced = m.fenced && raiser
		if s.ext != nil {
			extenders++
		}
	}
	if n := len(refs); !q.Met(extenders, n) {
		m.unextendable = func(op, resource string) error {
			return &Error{Op: op, Resource: resource, Err: fmt.Errorf("%d of %d stores can extend locks, short of a quorum: %w", extenders, n, errors.ErrUnsupported)}
		}
	}
	return m, nil
}

// attempt implements engine: one Redlock attempt with a fresh token.
func (m *MultiLocker) attempt(ctx context.Context, op, resource string, ttl time.Duration) (Lock, inproc.Instant, time.Duration, *Error) {
	start := inproc.Now()
	if ctx.Err() != nil {
		return Lock{}, start, 0, &Error{Err: ctxErr(ctx)}
	}
	token, e := m.token()
	if e != nil {
		return Lock{}, start, 0, e
	}
	n := len(m.stores)
	sctx, stop := context.WithTimeout(ctx, m.storeTimeout)
	b := newBallot(ctx, m, op, resource, token, stop)
	acquire := Call{Op: CallAcquire, Resource: resource, Token: token, TTL: m.storeTTL(ttl)}
	if m.fenced {
		acquire.Op = CallAcquireFenced
	}
	for i := range m.stores {
		m.start(ctx, sctx, op, i, acquire, b.cast)
	}
	met, fence, counts := b.outcome()
	elapsed := inproc.Since(start)
	if m.obs.on() {
		var err error
		if !met {
			err = ErrNotAcquired
			if m.quorum.Met(n-counts[1], n) {
				err = ErrUnavailable // failures, or a fence that could not be established
			}
		}
		m.obs.emit(ctx, Event{Kind: EventQuorum, Op: op, Resource: resource, Granted: counts[0], Refused: counts[1], Failed: counts[2], Duration: elapsed, Err: err})
	}
	var cause error
	if met {
		if elapsed < m.validity(ttl) {
			// Stores still answering may yet take it under token, and
			// those that failed are asked again in the background: Unlock
			// and Extend wait for them (see ballot.go).
			l := Lock{Resource: resource, Token: token, ValidUntil: m.validUntil(start, ttl), Fence: fence}
			// Stores still answering, and backfill, take it for less than
			// a store timeout from now.
			beyond := m.heldBeyond(elapsed+m.storeTimeout, ttl)
			if b.grant(ctx, op, l, m.clock.After(start, m.storeTTL(ttl))) {
				m.held.putAttached(l, beyond, b)
			} else {
				m.held.put(l, beyond)
			}
			return l, start, elapsed, nil
		}
		cause = fmt.Errorf("%w: quorum reached after %v, past the lock's validity", ErrUnavailable, elapsed.Round(time.Microsecond))
	}
	// The attempt failed: release what it may hold (see ballot.go).
	b.release(context.WithoutCancel(ctx), op, false)
	b.mu.Lock()
	refused, failed, unfenced := b.refused, b.failed, b.unfenced
	failures := b.failures()
	b.mu.Unlock()
	switch {
	case ended(ctx):
		cause = ctxErr(ctx)
	case cause != nil:
	case unfenced:
		cause = fmt.Errorf("%w: a quorum granted the lock, but too few of them could raise their fences to the lock's (%d)", ErrUnavailable, fence)
	case !m.quorum.Met(n-refused, n):
		cause = ErrNotAcquired
	case !m.quorum.Met(n-invalid(failures), n):
		// Stores that refuse the request itself refuse it again: final.
		cause = fmt.Errorf("%w: %d of %d stores refused the request; quorum %v cannot be met", ErrInvalid, invalid(failures), n, m.quorum)
	default:
		cause = fmt.Errorf("%w: %d of %d stores failed; quorum %v not met", ErrUnavailable, failed, n, m.quorum)
	}
	return Lock{}, start, elapsed, &Error{Err: cause, Stores: failures}
}

// hears implements hearer: the wait after the attempt that returned last
// hears the stores that refused it and can notify their releases.
func (m *MultiLocker) hears(last *Error) hearing {
	h := hearing{all: true}
	for _, f := range last.Stores {
		if errors.Is(f.Err, ErrNotAcquired) {
			notifies := m.stores[f.Index].waiter != nil
			h.some = h.some || notifies
			h.all = h.all && notifies
		}
	}
	h.stores = h.all
	return h
}

// wait implements engine: it waits on the stores that refused the last
// attempt and can notify, until the first wakes.
func (m *MultiLocker) wait(ctx context.Context, op, resource string, last *Error) bool {
	var ws []storeRef
	for _, f := range last.Stores {
		if s := m.stores[f.Index]; s.waiter != nil && errors.Is(f.Err, ErrNotAcquired) {
			ws = append(ws, s)
		}
	}
	if len(ws) == 0 {
		return false
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	woke := make(chan bool, len(ws))
	for _, s := range ws {
		go func() {
			t0 := m.obs.start()
			err := s.waiter.WaitRelease(wctx, resource)
			// Told in wctx: a wait ended because another woke is not a
			// store's failure.
			m.obs.storeCall(wctx, op, resource, &s, "wait", t0, err)
			woke <- err == nil
		}()
	}
	woken := false
	for range ws {
		if <-woke && !woken {
			woken = true
			cancel()
		}
	}
	return woken
}

// waitHolding waits for a release of name on the stores that hold it
// (or cannot tell), for a locker built on this one that does not know
// which stores refused it: a store that does not hold name would answer
// at once, and Lock would spin. It reports true at once if no store
// holds name.
func (m *MultiLocker) waitHolding(ctx context.Context, op, name string) bool {
	held, errs := fanoutFunc(ctx, m, op, name, "exists", func(ctx context.Context, s storeRef) (bool, error) {
		return s.Exists(ctx, name)
	})
	holding := &Error{Err: ErrNotAcquired}
	for i, st := range m.stores {
		if errs[i] != nil || held[i] {
			holding.Stores = append(holding.Stores, StoreError{Index: i, Store: st.name, Err: ErrNotAcquired})
		}
	}
	if len(holding.Stores) == 0 {
		return ctx.Err() == nil
	}
	return m.wait(ctx, op, name, holding)
}

// repair takes l again, for ttl, on the stores whose error in errs says
// they no longer hold it (they restarted empty, evicted it, or let it
// expire while unreachable), and clears the errors of those that took it.
// It is called only while a quorum holds l, so no other owner can hold a
// quorum: re-taking a free store under l's token restores the lock's
// redundancy, so that one more store loss does not drop it below quorum.
// A store another owner took in the meantime refuses (SET NX semantics).
// If l's ballot is still attached (b), the stores asked are recorded
// there as stores that may hold l, for Unlock to release them.
func (m *MultiLocker) repair(ctx context.Context, op string, l Lock, ttl time.Duration, errs []error, b *ballot) {
	c := Call{Op: CallAcquire, Resource: l.Resource, Token: l.Token, TTL: m.storeTTL(ttl)}
	asked := func(i int) bool { return errors.Is(errs[i], ErrNotHeld) }
	retaken := m.fanout(ctx, op, c, asked)
	if b != nil {
		b.mu.Lock()
		for i, err := range retaken {
			if asked(i) {
				b.mayHold[i] = true
				b.ambiguous[i] = b.ambiguous[i] || err != nil && !isOutcome(err)
			}
		}
		b.mu.Unlock()
	}
	for i, err := range retaken {
		if err == nil && asked(i) {
			errs[i] = nil
		}
	}
}

// IsLocked implements [Locker]: true if any store holds resource.
func (m *MultiLocker) IsLocked(ctx context.Context, resource string) (bool, error) {
	const op = "islocked"
	if err := m.checkQuery(ctx, op, resource); err != nil {
		return false, err
	}
	held, errs := fanoutFunc(ctx, m, op, resource, "exists", func(ctx context.Context, s storeRef) (bool, error) {
		return s.Exists(ctx, resource)
	})
	var failures []StoreError
	for i, err := range errs {
		if held[i] {
			return true, nil
		}
		if err != nil {
			failures = append(failures, m.storeError(i, err))
		}
	}
	switch {
	case failures == nil:
		return false, nil
	case invalid(failures) == len(failures):
		// Stores that refuse the request itself refuse it again: final.
		return false, m.failure(ctx, op, resource, fmt.Errorf("%w: no store reported the resource held, %d refused the request", ErrInvalid, len(failures)), failures)
	}
	return false, m.failure(ctx, op, resource, fmt.Errorf("%w: no store reported the resource held, %d could not tell", ErrUnavailable, len(failures)), failures)
}

// Unlock implements [Locker]. It releases l on every store, and succeeds
// if a quorum of them released it: the stores that failed (they may hold
// their copy until it expires) are asked again in the background, and the
// hook sees those calls. A store whose release failed, and which finds
// nothing when asked again, counts as released: the failed release may
// have applied, its reply lost. It reports ErrNotHeld if fewer than a
// quorum of stores still held the lock, ErrInvalid if stores that refused
// the request itself (an error matching ErrInvalid: they refuse it again)
// leave too few to make a quorum, and ErrUnavailable if failed stores
// leave it undecided whether a quorum did. Retried after ErrUnavailable,
// on the locker that took the lock, it counts the stores that the earlier
// call, or the background, released as released. If ctx ends first,
// Unlock returns ctx's error, and the stores that did not release the
// lock are asked again in the background, as failed stores are.
func (m *MultiLocker) Unlock(ctx context.Context, l Lock) error {
	const op = "unlock"
	if err := m.checkHeld(ctx, op, l); err != nil {
		return err
	}
	ctx = m.obs.begin(ctx, op, l.Resource)
	t0 := m.obs.start()
	err := m.unlock(ctx, op, l)
	if m.obs.on() {
		m.obs.emit(ctx, Event{Kind: EventReleased, Op: op, Resource: l.Resource, Lock: l, Duration: inproc.Since(t0), Err: err})
	}
	return err
}

// unlock releases l on the stores, in its turn among this locker's
// Unlocks of l. The turn is passed on however the call ends, a store's
// panic included.
func (m *MultiLocker) unlock(ctx context.Context, op string, l Lock) error {
	if err := m.unlocks.enter(ctx, l); err != nil {
		return &Error{Op: op, Resource: l.Resource, Err: ctxErr(ctx)}
	}
	defer m.unlocks.leave(l)
	undecided, _ := m.held.attached(l).(*undecidedUnlock)
	errs := m.release(ctx, op, l)
	n := len(m.stores)
	if undecided != nil {
		for i, err := range errs {
			if errors.Is(err, ErrNotHeld) && undecided.released[i].Load() {
				errs[i] = nil // released by an earlier call, or in the background
			}
		}
	}
	released, failures := m.tally(errs)
	notHeld, refused := countOutcomes(failures), invalid(failures)
	switch {
	case m.quorum.Met(released, n):
		m.held.remove(l)
		return nil
	case !m.quorum.Met(n-notHeld, n):
		m.held.remove(l)
		return &Error{Op: op, Resource: l.Resource, Err: ErrNotHeld, Stores: failures}
	case !m.quorum.Met(n-refused, n):
		// Stores that refuse the request itself refuse it again: final.
		return m.failure(ctx, op, l.Resource, fmt.Errorf("%w: %d of %d stores refused the request; quorum %v cannot be met", ErrInvalid, refused, n, m.quorum), failures)
	}
	if undecided == nil {
		undecided = &undecidedUnlock{released: make([]atomic.Bool, n)}
	}
	for i, err := range errs {
		// A store whose release failed may have released the lock, its
		// reply lost: one that then finds nothing counts as released.
		if err == nil || !isOutcome(err) && !errors.Is(err, ErrInvalid) {
			undecided.released[i].Store(true)
		}
	}
	m.held.attach(l, undecided)
	failed := len(failures) - notHeld
	return m.failure(ctx, op, l.Resource, fmt.Errorf("%w: %d of %d stores failed to release and may hold the lock until it expires", ErrUnavailable, failed, n), failures)
}

// undecidedUnlock is what a MultiLocker keeps with a lock whose Unlock
// was left undecided (ErrUnavailable): the stores that released it since,
// in that call, a retry or the background (releaseLater), or whose
// release failed in it (the release may have applied, its reply lost),
// so that a retried Unlock counts them as released rather than as stores
// that no longer held the lock. (A background release that lands before the
// record is kept is not counted, and the retry reports ErrNotHeld: its
// first try waits a store timeout, and the Unlock returns at once.) The
// held set keeps the record until the lock expires; a lock this locker
// did not take has none.
type undecidedUnlock struct{ released []atomic.Bool }

// releasedLater records that the background released c's token on store
// i, for a retried Unlock (see undecidedUnlock).
func (m *MultiLocker) releasedLater(c Call, i int) {
	if u, ok := m.held.attached(Lock{Resource: c.Resource, Token: c.Token}).(*undecidedUnlock); ok {
		u.released[i].Store(true)
	}
}

// release releases l on every store and returns their errors in store
// order, once every store answered, or a store timeout passed with a
// quorum released (see collect); for a lock
// whose ballot is still attached (see ballot.go), it halts the background
// work first and releases store by store. The stores whose release failed
// are asked again in the background.
func (m *MultiLocker) release(ctx context.Context, op string, l Lock) []error {
	b := m.ballot(l)
	if b == nil {
		return m.releaseAll(ctx, op, Call{Op: CallRelease, Resource: l.Resource, Token: l.Token}, nil, true, false)
	}
	if err := b.halt(ctx, op); err != nil {
		// ctx ended while background work was under way: the stores
		// that may hold the lock are released in the background.
		b.releaseLater(ctx, op)
		return fill(make([]error, len(m.stores)), err)
	}
	return b.release(ctx, op, true)
}

// ballot returns the ballot attached to l in the held set, or nil.
func (m *MultiLocker) ballot(l Lock) *ballot {
	b, _ := m.held.attached(l).(*ballot)
	return b
}

// Extend implements [Locker]. The lock is extended if a quorum of stores
// extended it and validity remains; stores that cannot extend count as
// failures, and if too few stores can extend ([Extender]) to make a
// quorum, Extend reports errors.ErrUnsupported and sends nothing. When a
// quorum extended it, the stores that had lost it (a restart, an
// eviction, an expiry while unreachable) are asked to take it again under
// the same token, so that the lock regains the redundancy it had: [Run],
// which extends every ttl/3, thereby repairs missing votes continuously.
// When fewer than a quorum still held it, it reports ErrNotHeld and
// releases it on the stores that did, so that none keeps for the new TTL
// a lock that nobody holds.
func (m *MultiLocker) Extend(ctx context.Context, l Lock, ttl time.Duration) (Lock, error) {
	const op = "extend"
	if err := m.enterExtend(ctx, op, l, ttl); err != nil {
		return Lock{}, err
	}
	defer m.gate.leave()
	if m.unextendable != nil {
		return Lock{}, m.unextendable(op, l.Resource)
	}
	ctx = m.obs.begin(ctx, op, l.Resource)
	t0 := m.obs.start()
	next, err := m.extend(ctx, op, l, ttl)
	if m.obs.on() {
		seen := next
		if err != nil {
			seen = l // the lock the failed extension was for, as SingleLocker reports it
		}
		m.obs.emit(ctx, Event{Kind: EventExtended, Op: op, Resource: l.Resource, Lock: seen, Duration: inproc.Since(t0), Err: err})
	}
	return next, err
}

func (m *MultiLocker) extend(ctx context.Context, op string, l Lock, ttl time.Duration) (Lock, error) {
	b := m.ballot(l)
	if b != nil {
		if err := b.settle(ctx, op); err != nil {
			return Lock{}, err
		}
	}
	start := inproc.Now()
	errs := m.fanout(ctx, op, Call{Op: CallExtend, Resource: l.Resource, Token: l.Token, TTL: m.storeTTL(ttl)}, nil)
	extended, _ := m.tally(errs)
	n := len(m.stores)
	if m.quorum.Met(extended, n) && extended < n {
		m.repair(ctx, op, l, ttl, errs, b)
	}
	extended, failures := m.tally(errs)
	if m.quorum.Met(extended, n) {
		next := l
		next.ValidUntil = m.validUntil(start, ttl)
		elapsed := inproc.Since(start)
		if elapsed >= m.validity(ttl) {
			m.mayHold(l, start, ttl, elapsed)
			return Lock{}, m.failure(ctx, op, l.Resource, fmt.Errorf("%w: extended after %v, past the new validity", ErrUnavailable, elapsed.Round(time.Microsecond)), failures)
		}
		m.held.extended(next, m.heldBeyond(elapsed, ttl))
		return next, nil
	}
	notHeld, refused := countOutcomes(failures), invalid(failures)
	if m.quorum.Met(n-notHeld, n) {
		// Stores that extended it, or failed, may hold it that long.
		m.mayHold(l, start, ttl, inproc.Since(start))
	}
	switch {
	case !m.quorum.Met(n-notHeld, n):
		m.held.remove(l)
		// Nobody holds the lock: the stores that still had it, and may
		// now keep it for ttl, release it (as Unlock would).
		stillHad := func(i int) bool { return errs[i] == nil || !isOutcome(errs[i]) && !errors.Is(errs[i], ErrInvalid) }
		m.releaseAll(ctx, op, Call{Op: CallRelease, Resource: l.Resource, Token: l.Token}, stillHad, true, false)
		return Lock{}, &Error{Op: op, Resource: l.Resource, Err: ErrNotHeld, Stores: failures}
	case !m.quorum.Met(n-refused, n):
		// Stores that refuse the request itself refuse it again: final.
		return Lock{}, m.failure(ctx, op, l.Resource, fmt.Errorf("%w: %d of %d stores refused the request; quorum %v cannot be met", ErrInvalid, refused, n, m.quorum), failures)
	}
	return Lock{}, m.failure(ctx, op, l.Resource, fmt.Errorf("%w: %d of %d stores extended the lock; quorum %v not met", ErrUnavailable, extended, n, m.quorum), failures)
}

// tally counts successes and collects the stores that did not succeed.
func (m *MultiLocker) tally(errs []error) (ok int, failures []StoreError) {
	for i, err := range errs {
		if err == nil {
			ok++
		} else {
			failures = append(failures, m.storeError(i, err))
		}
	}
	return ok, failures
}

func countOutcomes(failures []StoreError) int {
	n := 0
	for _, f := range failures {
		if isOutcome(f.Err) {
			n++
		}
	}
	return n
}

func (m *MultiLocker) storeError(i int, err error) StoreError {
	return StoreError{Index: i, Store: m.stores[i].name, Err: err}
}

// failure builds the error of an operation that failed with cause, or with
// the context's error if ctx ended.
func (m *MultiLocker) failure(ctx context.Context, op, resource string, cause error, failures []StoreError) error {
	if ended(ctx) {
		cause = ctxErr(ctx)
	}
	return &Error{Op: op, Resource: resource, Err: cause, Stores: failures}
}

// invalid counts the stores that refused the request as invalid.
func invalid(failures []StoreError) int {
	k := 0
	for _, f := range failures {
		if errors.Is(f.Err, ErrInvalid) {
			k++
		}
	}
	return k
}

// checkQuorum refuses a quorum that n stores can never meet, that half of
// them or fewer meet (two owners could hold a lock at once), or that is
// not monotonic (met with g grants, not with more).
func checkQuorum(op string, q Quorum, n int) error {
	if !q.Met(n, n) {
		return invalidf(op, "", "Options.Quorum %v can never be met with %d stores", q, n)
	}
	for g := 0; g < n; g++ {
		switch met := q.Met(g, n); {
		case met && g <= n/2:
			return invalidf(op, "", "Options.Quorum %v is met by %d of %d stores, so two owners could hold a lock at once: it must require more than half", q, g, n)
		case met && !q.Met(g+1, n):
			return invalidf(op, "", "Options.Quorum %v is met by %d of %d stores but not by %d: it must be monotonic", q, g, n, g+1)
		}
	}
	return nil
}

// unlockLine makes the Unlocks of one lock in a MultiLocker take turns:
// two at once would split the stores' releases between them, and neither
// would count a quorum released. The second finds the lock released by
// the first (ErrNotHeld), as on a single store.
type unlockLine struct {
	mu   sync.Mutex
	busy map[unlockKey]chan struct{} // a nil channel: nobody waits yet
}

type unlockKey struct{ resource, token string }

// enter waits until no other Unlock of l is under way in this locker, or
// ctx ends (its error).
func (u *unlockLine) enter(ctx context.Context, l Lock) error {
	k := unlockKey{l.Resource, l.Token}
	for {
		u.mu.Lock()
		ch, busy := u.busy[k]
		if !busy {
			if u.busy == nil {
				u.busy = make(map[unlockKey]chan struct{})
			}
			u.busy[k] = nil
			u.mu.Unlock()
			return nil
		}
		if ch == nil {
			ch = make(chan struct{})
			u.busy[k] = ch
		}
		u.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// leave ends the Unlock of l, letting the next one in.
func (u *unlockLine) leave(l Lock) {
	k := unlockKey{l.Resource, l.Token}
	u.mu.Lock()
	if ch := u.busy[k]; ch != nil {
		close(ch)
	}
	delete(u.busy, k)
	u.mu.Unlock()
}
