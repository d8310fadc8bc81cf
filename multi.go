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
	if err := m.checkLock(op, resource, ttl); err != nil {
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
	if err := m.checkLock(op, resource, ttl); err != nil {
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

// vote is one store's answer to an attempt.
type vote struct {
	i   int
	err error
}

// ballot collects the votes of one attempt. Its done channel closes when
// every store has answered.
type ballot struct {
	votes chan vote
	left  atomic.Int32
	done  chan struct{}
}

func (b *ballot) cast(v vote) {
	b.votes <- v
	if b.left.Add(-1) == 0 {
		close(b.done)
	}
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
	b := &ballot{votes: make(chan vote, n), done: make(chan struct{})}
	b.left.Store(int32(n))
	votes := b.votes
	for i := range m.stores {
		go m.acquireOne(ctx, op, i, resource, token, ttl, b)
	}

	answered := make([]bool, n)
	var failures []StoreError
	granted, refused, failed, received := 0, 0, 0, 0
	met := false
	for received < n {
		v := <-votes
		received++
		answered[v.i] = true
		switch {
		case v.err == nil:
			granted++
		case errors.Is(v.err, ErrNotAcquired):
			refused++
			failures = append(failures, m.storeError(v.i, v.err))
		default:
			failed++
			failures = append(failures, m.storeError(v.i, v.err))
		}
		if m.quorum.Met(granted, n) {
			met = true
			break
		}
		if !m.quorum.Met(n-refused-failed, n) {
			break
		}
	}

	if m.obs.on() {
		var err error
		if !met {
			err = ErrNotAcquired
			if m.quorum.Met(n-refused, n) {
				err = ErrUnavailable
			}
		}
		m.obs.emit(ctx, Event{Kind: EventQuorum, Op: op, Resource: resource, Granted: granted, Refused: refused, Failed: failed, Duration: time.Since(start), Err: err})
	}
	var cause error
	if met {
		l := Lock{Resource: resource, Token: token, ValidUntil: m.validUntil(start, ttl)}
		if l.Valid() {
			// Stores still answering may yet take it under token: Unlock
			// and Extend wait for them (see settle).
			var pending <-chan struct{}
			if received < n {
				pending = b.done
			}
			m.held.putPending(l, pending)
			return l, nil
		}
		cause = fmt.Errorf("%w: quorum reached after %v, past the lock's validity", ErrUnavailable, time.Since(start).Round(time.Microsecond))
	}
	// The attempt failed: release what it may hold. That waits for the
	// stores still due to answer, so the failure is classified on every
	// answer, not on whichever came first.
	for _, v := range m.releaseAttempt(ctx, op, resource, token, votes, answered, failures) {
		failures = append(failures, m.storeError(v.i, v.err))
		if errors.Is(v.err, ErrNotAcquired) {
			refused++
		} else if v.err != nil {
			failed++
		}
	}
	switch {
	case ctx.Err() != nil:
		cause = ctxErr(ctx)
	case cause != nil:
	case !m.quorum.Met(n-refused, n):
		cause = ErrNotAcquired
	default:
		cause = fmt.Errorf("%w: %d of %d stores failed; quorum %v not met", ErrUnavailable, failed, n, m.quorum)
	}
	sortStoreErrors(failures)
	return Lock{}, &Error{Err: cause, Stores: failures}
}

// acquireOne asks store i for the lock and sends its answer to votes.
func (m *MultiLocker) acquireOne(ctx context.Context, op string, i int, resource, token string, ttl time.Duration, b *ballot) {
	err := m.call(ctx, op, resource, "acquire", i, func(ctx context.Context, s storeRef) error {
		return s.Acquire(ctx, resource, token, ttl)
	})
	b.cast(vote{i: i, err: err})
}

// call runs f, the storeOp of a locker operation op, on store i within
// the per-store timeout, and tells the hook. A timeout of the store call,
// while ctx is alive, becomes a timeoutError — also when the store reports
// context.DeadlineExceeded a moment before sctx does (a client whose
// socket deadline, set from sctx, fires before sctx's own timer), so that
// no error of a live ctx matches DeadlineExceeded.
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
// the answers still due (each bounded by the store timeout) and returns
// the failed ones among them. Stores that refused the fresh token hold
// nothing of it and are skipped.
func (m *MultiLocker) releaseAttempt(ctx context.Context, op, resource, token string, votes <-chan vote, answered []bool, failures []StoreError) (late []vote) {
	cctx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	release := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = m.call(cctx, op, resource, "release", i, func(ctx context.Context, s storeRef) error { return s.Release(ctx, resource, token) })
		}()
	}
	refused := make([]bool, len(m.stores))
	for _, f := range failures {
		refused[f.Index] = errors.Is(f.Err, ErrNotAcquired)
	}
	pending := 0
	for i, done := range answered {
		switch {
		case !done:
			pending++
		case !refused[i]:
			release(i)
		}
	}
	for ; pending > 0; pending-- {
		v := <-votes
		if !errors.Is(v.err, ErrNotAcquired) {
			release(v.i)
		}
		if v.err != nil {
			late = append(late, v)
		}
	}
	wg.Wait()
	return late
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

// fanout runs f, the storeOp of operation op, on every store
// concurrently, each within the store timeout, and returns their errors in
// store order.
func (m *MultiLocker) fanout(ctx context.Context, op, resource, storeOp string, f func(context.Context, storeRef) error) []error {
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
	var wg sync.WaitGroup
	for i, err := range errs {
		if !errors.Is(err, ErrNotHeld) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := m.call(ctx, op, l.Resource, "acquire", i, func(ctx context.Context, s storeRef) error {
				return s.Acquire(ctx, l.Resource, l.Token, ttl)
			})
			if err == nil {
				errs[i] = nil
			}
		}()
	}
	wg.Wait()
}

// IsLocked implements [Locker]: true if any store holds resource.
func (m *MultiLocker) IsLocked(ctx context.Context, resource string) (bool, error) {
	const op = "islocked"
	if err := m.checkResource(op, resource); err != nil {
		return false, err
	}
	held := make([]bool, len(m.stores))
	errs := m.fanout(ctx, op, resource, "exists", func(ctx context.Context, s storeRef) (err error) {
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
	if err := m.checkHeld(op, l); err != nil {
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
// bounded by the store timeout.
func (m *MultiLocker) settle(ctx context.Context, op string, l Lock) error {
	if pending := m.held.pending(l); pending != nil {
		select {
		case <-pending:
		case <-ctx.Done():
			return &Error{Op: op, Resource: l.Resource, Err: ctxErr(ctx)}
		}
	}
	return nil
}

func (m *MultiLocker) unlock(ctx context.Context, op string, l Lock) error {
	if err := m.settle(ctx, op, l); err != nil {
		return err
	}
	errs := m.fanout(ctx, op, l.Resource, "release", func(ctx context.Context, s storeRef) error {
		return s.Release(ctx, l.Resource, l.Token)
	})
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
	if err := m.checkHeld(op, l); err != nil {
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
	errs := m.fanout(ctx, op, l.Resource, "extend", func(ctx context.Context, s storeRef) error {
		if s.ext == nil {
			return fmt.Errorf("cannot extend locks: %w", errors.ErrUnsupported)
		}
		return s.ext.Extend(ctx, l.Resource, l.Token, ttl)
	})
	extended, _ := m.tally(errs)
	n := len(m.stores)
	if m.quorum.Met(extended, n) && extended < n {
		m.repair(ctx, op, l, ttl, errs)
	}
	extended, failures := m.tally(errs)
	if m.quorum.Met(extended, n) {
		next := l
		next.ValidUntil = m.validUntil(start, ttl)
		if next.Valid() {
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
	m.closed.Store(true)
	return m.UnlockAll(ctx)
}

func sortStoreErrors(s []StoreError) {
	slices.SortFunc(s, func(a, b StoreError) int { return a.Index - b.Index })
}
