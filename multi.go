package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// MultiLocker takes each lock in several independent stores at once and
// holds it when a quorum of them granted it: the Redlock algorithm.
//
// Every attempt sends the same resource and a fresh token to all stores
// concurrently, each call bounded by Options.StoreTimeout, and decides as
// soon as the quorum is met or can no longer be met. The lock's validity is
// ttl − elapsed − drift, where drift = ttl×DriftFactor + 2ms + the largest
// TTL granularity among the stores; the lock is granted only if the quorum
// is met and validity remains. After a failed attempt the locker releases
// the lock on every store that granted it or whose answer was lost,
// before retrying.
//
// Once a lock is granted, the stores that failed during the attempt are
// asked again in the background, under the same token and for the TTL the
// others have left (twice at most, a store timeout apart, while the lock
// is valid), and each Extend re-takes the lock on stores that lost it: so
// the lock regains the redundancy it could have, and one more store loss
// does not drop it below quorum. Unlock and Extend first stop that work
// and wait for the calls under way.
//
// With a majority quorum, mutual exclusion survives the loss of a minority
// of the stores, provided stores that restart do not come back empty while
// a lock they granted is still valid, and clocks do not jump by more than
// the drift allowance. Locks taken by a MultiLocker carry no fence.
type MultiLocker struct {
	core
	stores []storeRef
	quorum Quorum
}

var _ Locker = (*MultiLocker)(nil)

// NewMulti returns a locker over stores, which must be distinct. A nil opts
// gives the defaults (majority quorum).
func NewMulti(stores []Store, opts *Options) (*MultiLocker, error) {
	const op = "new"
	m := &MultiLocker{}
	if err := m.init(op, opts); err != nil {
		return nil, err
	}
	if len(stores) == 0 {
		return nil, invalidf(op, "", "no stores")
	}
	refs, err := m.resolve(op, stores)
	if err != nil {
		return nil, err
	}
	q := defaultQuorum
	if opts != nil && opts.Quorum != nil {
		q = opts.Quorum
	}
	n := len(stores)
	switch {
	case !q.Met(n, n):
		return nil, invalidf(op, "", "quorum %v can never be met with %d stores", q, n)
	case q.Met(n/2, n):
		return nil, invalidf(op, "", "quorum %v is met by %d of %d stores, so two owners could hold a lock at once: it must require more than half", q, n/2, n)
	}
	m.stores, m.quorum = refs, q
	return m, nil
}

// Lock implements [Locker].
func (m *MultiLocker) Lock(ctx context.Context, resource string, ttl time.Duration, opts ...Option) (Lock, error) {
	const op = "lock"
	if err := m.checkLock(ctx, op, resource, ttl); err != nil {
		return Lock{}, err
	}
	retry, err := m.policy(op, resource, collect(opts))
	if err != nil {
		return Lock{}, err
	}
	return m.acquire(ctx, op, resource, ttl, retry)
}

// TryLock implements [Locker].
func (m *MultiLocker) TryLock(ctx context.Context, resource string, ttl time.Duration) (Lock, error) {
	const op = "trylock"
	if err := m.checkLock(ctx, op, resource, ttl); err != nil {
		return Lock{}, err
	}
	return m.acquire(ctx, op, resource, ttl, NoRetry)
}

func (m *MultiLocker) acquire(ctx context.Context, op, resource string, ttl time.Duration, retry Retry) (Lock, error) {
	attempt := func(ctx context.Context) (Lock, *Error) { return m.attempt(ctx, op, resource, ttl) }
	l, e := m.retryLoop(ctx, op, resource, retry, attempt, m.waitFunc(op, resource))
	if e != nil {
		return Lock{}, e
	}
	return l, nil // attempt recorded it in m.held
}

// ballot collects the answers of the stores to one attempt. It decides
// as soon as the quorum is met or can no longer be met, and wakes the
// caller then, once: the stores' answers are counted on whatever
// goroutine delivers them.
type ballot struct {
	quorum Quorum
	n      int
	stop   context.CancelFunc // ends the attempt's store context

	mu                       sync.Mutex
	errs                     []error
	answered                 []bool
	granted, refused, failed int
	received                 int
	decided, met             bool
	atDecision               [3]int // granted, refused, failed when it decided
	receivedAtDecision       int
	late                     func(i int, err error) // for the answers still to come, once set (releaseAttempt, release); called with mu held
	grantedLock              *grant                 // set once the attempt granted the lock (see multi_backfill.go)
	decision                 chan struct{}          // closed once decided
	done                     chan struct{}          // closed once every store answered
}

func newBallot(q Quorum, n int, stop context.CancelFunc) *ballot {
	return &ballot{
		quorum: q, n: n, stop: stop,
		errs: make([]error, n), answered: make([]bool, n),
		decision: make(chan struct{}), done: make(chan struct{}),
	}
}

// cast counts store i's answer.
func (b *ballot) cast(i int, err error) {
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
		b.met = b.quorum.Met(b.granted, b.n)
		if b.met || !b.quorum.Met(b.n-b.refused-b.failed, b.n) {
			b.decided = true
			b.atDecision = [3]int{b.granted, b.refused, b.failed}
			b.receivedAtDecision = b.received
			close(b.decision)
		}
	}
	if b.late != nil {
		// Under mu, so that every late answer is handled before done
		// closes (b.late must not wait for anything that takes mu).
		b.late(i, err)
	}
	last := b.received == b.n
	var backfill func()
	if last && b.grantedLock != nil {
		backfill = b.grantedLock.startLocked(b)
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

// failures returns the stores that answered other than with a grant.
// Called with mu held.
func (b *ballot) failures(m *MultiLocker) []StoreError {
	var out []StoreError
	for i, err := range b.errs {
		if b.answered[i] && err != nil {
			out = append(out, m.storeError(i, err))
		}
	}
	return out
}

// attempt makes one Redlock attempt with a fresh token.
func (m *MultiLocker) attempt(ctx context.Context, op, resource string, ttl time.Duration) (Lock, *Error) {
	if ctx.Err() != nil {
		return Lock{}, &Error{Err: ctxErr(ctx)}
	}
	token, e := m.token()
	if e != nil {
		return Lock{}, e
	}
	n := len(m.stores)
	start := time.Now()
	sctx, stop := context.WithTimeout(ctx, m.storeTimeout)
	b := newBallot(m.quorum, n, stop)
	acquire := Call{Op: CallAcquire, Resource: resource, Token: token, TTL: ttl}
	for i := range m.stores {
		m.start(ctx, sctx, op, i, acquire, b.cast)
	}
	<-b.decision

	b.mu.Lock()
	met, counts := b.met, b.atDecision
	b.mu.Unlock()
	if m.obs.on() {
		var err error
		if !met {
			err = ErrNotAcquired
			if m.quorum.Met(n-counts[1], n) {
				err = ErrUnavailable
			}
		}
		m.obs.emit(ctx, Event{Kind: EventQuorum, Op: op, Resource: resource, Granted: counts[0], Refused: counts[1], Failed: counts[2], Duration: time.Since(start), Err: err})
	}
	var cause error
	if met {
		if elapsed := time.Since(start); elapsed < m.validity(ttl) {
			// Stores still answering may yet take it under token, and
			// those that failed are asked again in the background: Unlock
			// and Extend wait for them (see settle and release).
			l := Lock{Resource: resource, Token: token, ValidUntil: m.validUntil(start, ttl)}
			m.held.putPending(l, m.grant(ctx, op, l, start.Add(ttl), b))
			return l, nil
		}
		cause = fmt.Errorf("%w: quorum reached after %v, past the lock's validity", ErrUnavailable, time.Since(start).Round(time.Microsecond))
	}
	// The attempt failed: release what it may hold. That waits for the
	// stores still due to answer, so the failure is classified on every
	// answer, not on whichever came first.
	m.releaseAttempt(ctx, op, resource, token, b)
	b.mu.Lock()
	refused, failed := b.refused, b.failed
	failures := b.failures(m)
	b.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		cause = ctxErr(ctx)
	case cause != nil:
	case !m.quorum.Met(n-refused, n):
		cause = ErrNotAcquired
	default:
		cause = fmt.Errorf("%w: %d of %d stores failed; quorum %v not met", ErrUnavailable, failed, n, m.quorum)
	}
	return Lock{}, &Error{Err: cause, Stores: failures}
}

// start starts call c on store i within sctx, a context derived from ctx
// that carries the store timeout, and calls done with the outcome once the
// store answers, on whatever goroutine delivers it; the hook is told.
// Stores that are Starters are asked directly; the others get a goroutine
// for the call. A timeout of the store call, while ctx is alive, becomes
// a timeoutError — also when the store reports context.DeadlineExceeded a
// moment before sctx does (a client whose socket deadline, set from sctx,
// fires before sctx's own timer), so that no error of a live ctx matches
// DeadlineExceeded.
func (m *MultiLocker) start(ctx, sctx context.Context, op string, i int, c Call, done func(i int, err error)) {
	s := &m.stores[i]
	t0 := m.obs.start()
	var answered atomic.Bool
	finish := func(_ uint64, err error) {
		if answered.Swap(true) {
			return // a broken store's second answer
		}
		if err != nil && !isOutcome(err) && ctx.Err() == nil && (sctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)) {
			err = timeoutError{after: m.storeTimeout.String()}
		}
		m.obs.storeCall(ctx, op, c.Resource, s, c.Op.String(), t0, err)
		done(i, err)
	}
	switch {
	case c.Op == CallExtend && s.ext == nil:
		finish(0, fmt.Errorf("cannot extend locks: %w", errors.ErrUnsupported))
	case s.starter != nil:
		s.starter.Start(sctx, c, finish)
	default:
		go func() { finish(c.Run(sctx, s.Store)) }()
	}
}

// call runs f, the storeOp of a locker operation op, on store i within
// the per-store timeout, and tells the hook, as start does.
func (m *MultiLocker) call(ctx context.Context, op, resource, storeOp string, i int, f func(context.Context, storeRef) error) error {
	t0 := m.obs.start()
	sctx, cancel := context.WithTimeout(ctx, m.storeTimeout)
	err := f(sctx, m.stores[i])
	if err != nil && !isOutcome(err) && ctx.Err() == nil && (sctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)) {
		err = timeoutError{after: m.storeTimeout.String()}
	}
	cancel()
	m.obs.storeCall(ctx, op, resource, &m.stores[i], storeOp, t0, err)
	return err
}

// releaseAttempt releases token on every store that granted it or whose
// answer was an error, including stores that answer only now: it waits for
// the answers still due (each bounded by the store timeout) and for the
// releases. Stores that refused the fresh token hold nothing of it and
// are skipped. A release that fails is tried again, up to cleanupTries
// times within the store timeout, as SingleLocker's cleanup does: the
// fault that made the attempt fail often broke the connection the release
// went out on too.
func (m *MultiLocker) releaseAttempt(ctx context.Context, op, resource, token string, b *ballot) {
	cctx := context.WithoutCancel(ctx)
	c := Call{Op: CallRelease, Resource: resource, Token: token}
	var wg sync.WaitGroup
	release := func(i int, vote error) {
		if errors.Is(vote, ErrNotAcquired) {
			return
		}
		wg.Add(1)
		rctx, cancel := context.WithTimeout(cctx, m.storeTimeout)
		tries := 1
		var released func(int, error)
		released = func(_ int, err error) {
			if err != nil && !errors.Is(err, ErrNotHeld) && rctx.Err() == nil && tries < cleanupTries {
				tries++
				m.start(cctx, rctx, op, i, c, released)
				return
			}
			cancel()
			wg.Done()
		}
		m.start(cctx, rctx, op, i, c, released)
	}
	b.mu.Lock()
	b.late = release
	var answered []int
	for i, ok := range b.answered {
		if ok {
			answered = append(answered, i)
		}
	}
	votes := slices.Clone(b.errs)
	b.mu.Unlock()
	for _, i := range answered {
		release(i, votes[i])
	}
	<-b.done // every Add is made before done closes
	wg.Wait()
}

// waitFunc returns how to wait for a release between attempts: on the
// stores that refused the last attempt and can notify, until the first
// wakes. It is nil when no store can notify.
func (m *MultiLocker) waitFunc(op, resource string) waitFunc {
	canWait := false
	for _, s := range m.stores {
		canWait = canWait || s.waiter != nil
	}
	if !canWait {
		return nil
	}
	return func(ctx context.Context, last *Error) bool {
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
				m.obs.storeCall(ctx, op, resource, &s, "wait", t0, err)
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
			m.start(ctx, sctx, op, i, c, func(i int, err error) {
				errs[i] = err
				wg.Done()
			})
		}
	}
	wg.Wait()
	return errs
}

// fanoutFunc runs f, the storeOp of operation op, on every store
// concurrently, each within the store timeout, and returns their errors
// in store order. It is for the calls a Starter cannot start (Exists).
func (m *MultiLocker) fanoutFunc(ctx context.Context, op, resource, storeOp string, f func(context.Context, storeRef) error) []error {
	errs := make([]error, len(m.stores))
	var wg sync.WaitGroup
	for i := range m.stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.call(ctx, op, resource, storeOp, i, f)
		}()
	}
	wg.Wait()
	return errs
}

// repair takes l again, for ttl, on the stores whose error in errs says
// they no longer hold it (they restarted empty, evicted it, or let it
// expire while unreachable), and clears the errors of those that took it.
// It is called only while a quorum holds l, so no other owner can hold a
// quorum: re-taking a free store under l's token restores the lock's
// redundancy, so that one more store loss does not drop it below quorum.
// A store another owner took in the meantime refuses (SET NX semantics).
func (m *MultiLocker) repair(ctx context.Context, op string, l Lock, ttl time.Duration, errs []error) {
	c := Call{Op: CallAcquire, Resource: l.Resource, Token: l.Token, TTL: ttl}
	retaken := m.fanout(ctx, op, c, func(i int) bool { return errors.Is(errs[i], ErrNotHeld) })
	for i, err := range retaken {
		if err == nil && errors.Is(errs[i], ErrNotHeld) {
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
	held := make([]bool, len(m.stores))
	errs := m.fanoutFunc(ctx, op, resource, "exists", func(ctx context.Context, s storeRef) (err error) {
		held[s.index], err = s.Exists(ctx, resource)
		return err
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
	if failures != nil {
		return false, m.failure(ctx, op, resource, fmt.Errorf("%w: no store reported the resource held, %d could not tell", ErrUnavailable, len(failures)), failures)
	}
	return false, nil
}

// Unlock implements [Locker]. It releases l on every store; it reports
// ErrUnavailable if a store failed (it may hold the lock until its TTL runs
// out) and ErrNotHeld if fewer than a quorum of stores still held it.
func (m *MultiLocker) Unlock(ctx context.Context, l Lock) error {
	const op = "unlock"
	if err := m.checkHeld(ctx, op, l); err != nil {
		return err
	}
	ctx = m.obs.begin(ctx, op, l.Resource)
	t0 := m.obs.start()
	err := m.unlock(ctx, op, l)
	if m.obs.on() {
		m.obs.emit(ctx, Event{Kind: EventReleased, Op: op, Resource: l.Resource, Lock: l, Duration: time.Since(t0), Err: err})
	}
	return err
}

// settle waits until every store has answered the acquisition of l, if it
// was granted before they all did: a release or extension sent earlier
// could overtake a slow store's acquisition (stores such as memcached
// serve concurrent calls on separate connections), find nothing, and leave
// that store holding the lock until its TTL runs out. Each answer is
// bounded by the store timeout. Extend settles first; Unlock (see
// release) waits store by store instead. Both first stop the background
// retries of the stores that failed (see backfill), and wait for those
// under way.
func (m *MultiLocker) settle(ctx context.Context, op string, l Lock) error {
	if pending := m.held.pending(l); pending != nil {
		select {
		case <-pending.done:
		case <-ctx.Done():
			return &Error{Op: op, Resource: l.Resource, Err: ctxErr(ctx)}
		}
		return pending.haltBackfill(ctx, op, l)
	}
	return nil
}

func (m *MultiLocker) unlock(ctx context.Context, op string, l Lock) error {
	errs := m.release(ctx, op, l)
	released, failures := m.tally(errs)
	if n := len(failures) - countOutcomes(failures); n > 0 {
		return m.failure(ctx, op, l.Resource, fmt.Errorf("%w: %d of %d stores failed to release and may hold the lock until it expires", ErrUnavailable, n, len(m.stores)), failures)
	}
	m.held.remove(l)
	if !m.quorum.Met(released, len(m.stores)) {
		return &Error{Op: op, Resource: l.Resource, Err: ErrNotHeld, Stores: failures}
	}
	return nil
}

// release releases l on every store and returns their errors in store
// order. A store still answering the acquisition of l is asked only once
// it has answered (see settle), each within a store timeout of being
// asked; the others at once.
func (m *MultiLocker) release(ctx context.Context, op string, l Lock) []error {
	c := Call{Op: CallRelease, Resource: l.Resource, Token: l.Token}
	b := m.held.pending(l)
	if b == nil {
		return m.fanout(ctx, op, c, nil)
	}
	if err := b.haltBackfill(ctx, op, l); err != nil {
		errs := make([]error, len(m.stores))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	n := len(m.stores)
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Add(n)
	done := func(i int, err error) {
		errs[i] = err
		wg.Done()
	}
	later := func(i int, _ error) {
		rctx, cancel := context.WithTimeout(ctx, m.storeTimeout)
		m.start(ctx, rctx, op, i, c, func(i int, err error) {
			cancel()
			done(i, err)
		})
	}
	b.mu.Lock()
	if b.late != nil { // another Unlock of l is under way: wait for every answer
		b.mu.Unlock()
		if err := m.settle(ctx, op, l); err != nil {
			for i := range errs {
				errs[i] = err
			}
			return errs
		}
		return m.fanout(ctx, op, c, nil)
	}
	answered := slices.Clone(b.answered)
	b.late = later
	b.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, m.storeTimeout)
	defer cancel()
	for i, ok := range answered {
		if ok {
			m.start(ctx, sctx, op, i, c, done)
		}
	}
	wg.Wait()
	return errs
}

// Extend implements [Locker]. The lock is extended if a quorum of stores
// extended it and validity remains; stores that cannot extend count as
// failures. When a quorum extended it, the stores that had lost it (a
// restart, an eviction, an expiry while unreachable) are asked to take it
// again under the same token, so that the lock regains the redundancy it
// had: [Run], which extends every ttl/3, thereby repairs missing votes
// continuously.
func (m *MultiLocker) Extend(ctx context.Context, l Lock, ttl time.Duration) (Lock, error) {
	const op = "extend"
	if m.closed.Load() {
		return Lock{}, &Error{Op: op, Resource: l.Resource, Err: ErrClosed}
	}
	if err := m.checkHeld(ctx, op, l); err != nil {
		return Lock{}, err
	}
	if err := m.checkTTL(op, l.Resource, ttl); err != nil {
		return Lock{}, err
	}
	ctx = m.obs.begin(ctx, op, l.Resource)
	start := time.Now()
	next, err := m.extend(ctx, op, l, ttl)
	if m.obs.on() {
		m.obs.emit(ctx, Event{Kind: EventExtended, Op: op, Resource: l.Resource, Lock: next, Duration: time.Since(start), Err: err})
	}
	return next, err
}

func (m *MultiLocker) extend(ctx context.Context, op string, l Lock, ttl time.Duration) (Lock, error) {
	if err := m.settle(ctx, op, l); err != nil {
		return Lock{}, err
	}
	start := time.Now()
	errs := m.fanout(ctx, op, Call{Op: CallExtend, Resource: l.Resource, Token: l.Token, TTL: ttl}, nil)
	extended, _ := m.tally(errs)
	n := len(m.stores)
	if m.quorum.Met(extended, n) && extended < n {
		m.repair(ctx, op, l, ttl, errs)
	}
	extended, failures := m.tally(errs)
	if m.quorum.Met(extended, n) {
		next := l
		next.ValidUntil = m.validUntil(start, ttl)
		if time.Since(start) < m.validity(ttl) {
			m.held.put(next)
			return next, nil
		}
		return Lock{}, m.failure(ctx, op, l.Resource, fmt.Errorf("%w: extended after %v, past the new validity", ErrUnavailable, time.Since(start).Round(time.Microsecond)), failures)
	}
	notHeld := countOutcomes(failures)
	if !m.quorum.Met(n-notHeld, n) {
		m.held.remove(l)
		return Lock{}, &Error{Op: op, Resource: l.Resource, Err: ErrNotHeld, Stores: failures}
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
	if ctx.Err() != nil {
		cause = ctxErr(ctx)
	}
	return &Error{Op: op, Resource: resource, Err: cause, Stores: failures}
}

// UnlockAll implements [Locker].
func (m *MultiLocker) UnlockAll(ctx context.Context) error { return m.unlockAll(ctx, m.Unlock) }

// Shutdown implements [Locker].
func (m *MultiLocker) Shutdown(ctx context.Context) error {
	if err := checkContext(ctx, "shutdown", ""); err != nil {
		return err
	}
	m.closed.Store(true)
	return m.UnlockAll(ctx)
}
