package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/stores/memory"
)

// noWaitStore is a memory store that can extend and fence but neither
// notify releases (lock.Waiter) nor start calls (lock.Starter).
type noWaitStore struct {
	lock.Store
	lock.Extender
	lock.FenceRaiser
	fmt.Stringer
}

// foreignLocker is a Locker of another package over one of ours: Run,
// semaphores and read-write locks cannot see through it.
type foreignLocker struct{ lock.Locker }

// auditSetup is a locker under audit, the lockers built on it, and the
// memory stores under it all.
type auditSetup struct {
	name  string
	ms    []*memory.Store
	base  lock.Locker
	sem   *lock.Semaphore
	rw    *lock.RWLocker
	fsem  *lock.Semaphore // over a foreign wrapper of base
	frw   *lock.RWLocker  // over a foreign wrapper of base
	fbase lock.Locker
	exact bool          // time is the bubble's (synctest): check how long calls take
	slack time.Duration // how long a call may outlive its context: see auditWorker
}

// auditSetups returns the lockers under audit: single and multi, over
// stores with and without Starter and Waiter.
func auditSetups(t *testing.T) []func() *auditSetup {
	build := func(name string, n int, wrap func(*memory.Store) lock.Store, o *lock.Options) func() *auditSetup {
		return func() *auditSetup {
			ms, ls := memStores(n)
			for i, m := range ms {
				ls[i] = wrap(m)
			}
			var base lock.Locker
			var opts *lock.Options
			slack := 50 * time.Millisecond
			if o != nil {
				o := *o
				o.Hook = &auditHook{} // a hook of its own per setup
				opts = &o
			}
			if n == 1 {
				base = mustSingle(t, ls[0], opts)
			} else {
				base = mustMulti(t, ls, opts)
				slack *= 2
			}
			a := &auditSetup{name: name, ms: ms, base: base, fbase: foreignLocker{base}, slack: slack}
			var err error
			if a.sem, err = lock.NewSemaphore(base, 2); err != nil {
				t.Fatalf("NewSemaphore() = %v", err)
			}
			if a.rw, err = lock.NewRWLocker(base); err != nil {
				t.Fatalf("NewRWLocker() = %v", err)
			}
			if a.fsem, err = lock.NewSemaphore(a.fbase, 2); err != nil {
				t.Fatalf("NewSemaphore(foreign) = %v", err)
			}
			if a.frw, err = lock.NewRWLocker(a.fbase); err != nil {
				t.Fatalf("NewRWLocker(foreign) = %v", err)
			}
			return a
		}
	}
	plain := func(m *memory.Store) lock.Store { return m }
	hidden := func(m *memory.Store) lock.Store { return withoutStart{m, m, m, m, m} }
	noWait := func(m *memory.Store) lock.Store { return noWaitStore{m, m, m, m} }
	basicStore := func(m *memory.Store) lock.Store { return basic{m} }
	hooked := &lock.Options{Holder: "host:1", LockDelay: 20 * time.Millisecond}
	return []func() *auditSetup{
		build("single/memory", 1, plain, nil),  // Permitter, Waiter, Starter: native semaphore
		build("single/nowait", 1, noWait, nil), // plain locks, polling
		build("single/basic", 1, basicStore, nil),
		build("single/hooked", 1, plain, hooked),  // a hook, a holder, a lock delay
		build("multi/starter", 3, plain, nil),     // Starter and Waiter
		build("multi/goroutines", 3, hidden, nil), // Waiter, a goroutine per call
		build("multi/nowait", 3, noWait, nil),     // neither
		build("multi/hooked", 3, hidden, &lock.Options{Holder: "host:1", NoFence: true}),
	}
}

// auditHook is a hook that reads every event it is told, as a hook that
// logs them would, so that the race detector sees the events' data.
type auditHook struct {
	mu     sync.Mutex
	events int
	held   map[string]string
}

func (h *auditHook) Observe(ctx context.Context, e lock.Event) {
	_ = ctx.Err()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events++
	if h.held == nil {
		h.held = make(map[string]string)
	}
	switch {
	case e.Kind == lock.EventAcquired:
		h.held[e.Resource] = e.Lock.Token
	case e.Err != nil:
		h.held[e.Resource] = e.Err.Error()
	}
}

// auditFaults injects a few faults, chosen by rng, on each store.
func auditFaults(rng *rand.Rand, ms []*memory.Store) {
	ops := []memory.Op{memory.OpAcquire, memory.OpRelease, memory.OpExtend, memory.OpExists, memory.OpWait, memory.OpRaiseFence, 0}
	for _, m := range ms {
		for range 1 + rng.IntN(3) {
			f := memory.Fault{Ops: ops[rng.IntN(len(ops))], Times: 1 + rng.IntN(4)}
			switch rng.IntN(4) {
			case 0:
				f.Delay = time.Duration(1+rng.IntN(120)) * time.Millisecond
			case 1:
				f.Err = errConnReset
			case 2:
				f.Err, f.AfterApply = errConnReset, true
			case 3:
				f.Delay, f.InFlight = time.Duration(1+rng.IntN(80))*time.Millisecond, true
			}
			m.Inject(f)
		}
	}
}

// auditCtx returns a context that ends at a random point: a deadline, a
// cancellation, or neither.
func auditCtx(rng *rand.Rand, parent context.Context) (context.Context, context.CancelFunc, time.Duration) {
	switch rng.IntN(4) {
	case 0:
		d := time.Duration(rng.IntN(200)) * time.Millisecond
		ctx, cancel := context.WithTimeout(parent, d)
		return ctx, cancel, d
	case 1:
		ctx, cancel := context.WithCancel(parent)
		d := time.Duration(rng.IntN(200)) * time.Millisecond
		stop := time.AfterFunc(d, cancel)
		return ctx, func() { stop.Stop(); cancel() }, d
	}
	ctx, cancel := context.WithTimeout(parent, 2*time.Second)
	return ctx, cancel, 2 * time.Second
}

// wantKnown fails the test if err is not one of the outcomes a call
// under faults and cancellation may report.
func wantKnown(t *testing.T, call string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, target := range []error{lock.ErrNotAcquired, lock.ErrNotHeld, lock.ErrUnavailable, lock.ErrClosed, lock.ErrLost, lock.ErrMaxHold, context.Canceled, context.DeadlineExceeded, errors.ErrUnsupported} {
		if errors.Is(err, target) {
			return
		}
	}
	t.Errorf("%s = %v; want nil or an error of the documented kinds", call, err)
}

// bounded runs call and fails the test if it returned later than budget
// after it began: its context's lifetime plus the bound the docs give.
// Under synctest, time is exact.
func (a *auditSetup) bounded(t *testing.T, name string, budget time.Duration, call func() error) error {
	t.Helper()
	start := time.Now()
	err := call()
	took := time.Since(start)
	if a.exact && took > budget {
		t.Errorf("%s returned after %v (err %v); want at most %v", name, took, err, budget)
	}
	wantKnown(t, name, err)
	return err
}

// auditWorker runs iterations random operations on a's lockers.
func auditWorker(t *testing.T, a *auditSetup, rng *rand.Rand, iterations int, guard *lock.FenceGuard) {
	const ttl = time.Second
	// A call may outlive its context by the cleanup calls that follow a
	// cancellation, each bounded by the store timeout (Options.StoreTimeout,
	// 50ms here): a release on a single store; on a MultiLocker, also the
	// raise of a granting store's fences, which its attempt waits for
	// without the caller's cancellation. A semaphore's or read-write
	// lock's call may give back what it took: one more.
	slack := a.slack
	resources := []string{"a", "b", "c"}
	for range iterations {
		r := resources[rng.IntN(len(resources))]
		ctx, cancel, life := auditCtx(rng, context.Background())
		budget := life + slack
		derivedBudget := budget + 50*time.Millisecond
		switch op := rng.IntN(14); op {
		case 0, 1: // Lock or TryLock, Extend, Unlock on the base locker
			var l lock.Lock
			err := a.bounded(t, a.name+" Lock", budget, func() (err error) {
				if op == 0 {
					l, err = a.base.Lock(ctx, r, ttl)
				} else {
					l, err = a.base.TryLock(ctx, r, ttl)
				}
				return err
			})
			if err == nil {
				if rng.IntN(2) == 0 {
					var next lock.Lock
					if a.bounded(t, a.name+" Extend", budget, func() (err error) { next, err = a.base.Extend(ctx, l, ttl); return err }) == nil {
						l = next
					}
				}
				uctx, ucancel, ulife := auditCtx(rng, context.Background())
				a.bounded(t, a.name+" Unlock", ulife+slack, func() error { return a.base.Unlock(uctx, l) })
				ucancel()
			}
		case 2: // Run, with a fenced write
			a.bounded(t, a.name+" Run", budget+ttl, func() error {
				return lock.Run(ctx, a.base, r, ttl, func(ctx context.Context, l lock.Lock) error {
					sleepOrDone(ctx, time.Duration(rng.IntN(300))*time.Millisecond)
					if cur, ok := lock.FromContext(ctx); ok && cur.Fence > 0 && ctx.Err() == nil {
						err := guard.Do(a.name+"/"+r, cur.Fence, func() error { return nil })
						if err != nil && !errors.Is(err, lock.ErrStaleFence) {
							t.Errorf("FenceGuard.Do = %v; want nil or ErrStaleFence", err)
						}
					}
					return nil
				}, lock.WithRetry(lock.Retry{Attempts: 3, Delay: 5 * time.Millisecond}))
			})
		case 3: // RunOnce, keeping the lock for a minimum interval
			a.bounded(t, a.name+" RunOnce", budget+ttl, func() error {
				err := lock.RunOnce(ctx, a.base, "job/"+r, ttl, func(ctx context.Context, _ lock.Lock) error {
					sleepOrDone(ctx, time.Duration(rng.IntN(100))*time.Millisecond)
					return nil
				}, lock.MinInterval(time.Duration(rng.IntN(3))*400*time.Millisecond))
				if errors.Is(err, lock.ErrSkipped) {
					return nil
				}
				return err
			})
		case 4: // Election: Lead
			e, err := lock.NewElection(a.base, "role/"+r, ttl, lock.WithRetry(lock.Retry{Attempts: 2, Delay: 5 * time.Millisecond}))
			wantNil(t, "NewElection", err)
			a.bounded(t, a.name+" Lead", budget+ttl, func() error {
				return e.Lead(ctx, func(ctx context.Context, _ *lock.Term) error {
					sleepOrDone(ctx, time.Duration(rng.IntN(300))*time.Millisecond)
					return nil
				})
			})
		case 5: // Election: Campaign, then Resign
			e, err := lock.NewElection(a.base, "role/"+r, ttl)
			wantNil(t, "NewElection", err)
			var term *lock.Term
			if a.bounded(t, a.name+" Campaign", budget, func() (err error) { term, err = e.Campaign(ctx); return err }) == nil {
				sleepOrDone(term.Context(), time.Duration(rng.IntN(300))*time.Millisecond)
				rctx, rcancel, rlife := auditCtx(rng, context.Background())
				a.bounded(t, a.name+" Resign", rlife+slack+ttl, func() error { return term.Resign(rctx) })
				rcancel()
			}
		case 6, 7: // a semaphore's permit, native or of plain locks, or over a foreign locker
			sem := a.sem
			if op == 7 {
				sem = a.fsem
			}
			var p lock.Lock
			if a.bounded(t, a.name+" Semaphore.Lock", derivedBudget, func() (err error) { p, err = sem.Lock(ctx, r, ttl); return err }) == nil {
				if rng.IntN(2) == 0 {
					a.bounded(t, a.name+" Semaphore.Extend", derivedBudget, func() (err error) { _, err = sem.Extend(ctx, p, ttl); return err })
				}
				uctx, ucancel, ulife := auditCtx(rng, context.Background())
				a.bounded(t, a.name+" Semaphore.Unlock", ulife+slack, func() error { return sem.Unlock(uctx, p) })
				ucancel()
			}
		case 8, 9, 10, 11: // a read-write lock's side
			rw := a.rw
			if op >= 10 {
				rw = a.frw
			}
			side := rw.Reader()
			if op%2 == 1 {
				side = rw.Writer()
			}
			var l lock.Lock
			if a.bounded(t, a.name+" RWLocker side Lock", derivedBudget, func() (err error) { l, err = side.Lock(ctx, r, ttl); return err }) == nil {
				sleepOrDone(ctx, time.Duration(rng.IntN(50))*time.Millisecond)
				uctx, ucancel, ulife := auditCtx(rng, context.Background())
				a.bounded(t, a.name+" RWLocker side Unlock", ulife+slack, func() error { return side.Unlock(uctx, l) })
				ucancel()
			}
		case 12: // UnlockAll racing the others
			a.bounded(t, a.name+" UnlockAll", budget, func() error { return a.base.UnlockAll(ctx) })
		case 13: // a Run over the foreign wrapper
			a.bounded(t, a.name+" Run(foreign)", budget+ttl, func() error {
				return lock.Run(ctx, a.fbase, "f/"+r, ttl, func(ctx context.Context, l lock.Lock) error {
					sleepOrDone(ctx, time.Duration(rng.IntN(300))*time.Millisecond)
					return nil
				}, lock.WithRetry(lock.Retry{Attempts: 2, Delay: 5 * time.Millisecond}))
			})
		}
		cancel()
	}
}

// sleepOrDone sleeps d, or until ctx ends.
func sleepOrDone(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// auditRun runs workers on a, shuts a's lockers down at a random point
// while they run, then once more with the faults cleared, and checks that
// nothing is left held in the stores once the background cleanups ran.
func auditRun(t *testing.T, a *auditSetup, seed uint64, workers, iterations int) {
	rng := rand.New(rand.NewPCG(seed, 0))
	auditFaults(rng, a.ms)
	var guard lock.FenceGuard
	var wg sync.WaitGroup
	for w := range workers {
		wrng := rand.New(rand.NewPCG(seed, uint64(w)+1))
		wg.Go(func() { auditWorker(t, a, wrng, iterations, &guard) })
	}
	// More faults while they run, then Shutdown racing them.
	for range rng.IntN(30) {
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		auditFaults(rng, a.ms)
	}
	sctx, scancel, slife := auditCtx(rng, context.Background())
	a.bounded(t, a.name+" Shutdown", slife+time.Second, func() error { return a.base.Shutdown(sctx) })
	scancel()
	wg.Wait()
	for _, m := range a.ms {
		m.ClearFaults()
	}
	// Once the faults are gone, Shutdown leaves nothing held.
	ctx := context.Background()
	for _, l := range []lock.Locker{a.sem, a.fsem, a.rw.Reader(), a.rw.Writer(), a.frw.Reader(), a.frw.Writer(), a.fbase} {
		wantNil(t, a.name+" Shutdown of a derived locker, faults cleared", l.Shutdown(ctx))
	}
	wantNil(t, a.name+" Shutdown, faults cleared", a.base.Shutdown(ctx))
	// The background cleanups (tried at most three times over 350ms, each
	// try bounded by a store timeout), late landings (InFlight, at most
	// 120ms) and backfills end well before a TTL. In the bubble, wait for
	// them all: a try under way when the test ends (a delayed store call
	// in a goroutine) would leave the bubble blocked. On the real
	// scheduler, poll for a while.
	if a.exact {
		time.Sleep(time.Second)
		if left := auditResidue(a.ms); len(left) > 0 {
			t.Errorf("%s: after Shutdown the stores still hold %q; want nothing", a.name, left)
		}
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := auditResidue(a.ms)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: after Shutdown the stores still hold %q; want nothing", a.name, left)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// auditResidue returns what the stores hold: locks, and permits on the
// resources the audit uses (Resources does not count permits), but not
// the semaphores' limit markers, which live for their TTL as documented.
func auditResidue(ms []*memory.Store) []string {
	var left []string
	for _, m := range ms {
		for _, r := range m.Resources() {
			if !strings.HasSuffix(r, "~limit") {
				left = append(left, m.String()+": "+r)
			}
		}
		for _, r := range []string{"a", "b", "c", "a~read", "b~read", "c~read"} {
			if n, err := m.Permits(context.Background(), r); err != nil || n > 0 {
				left = append(left, fmt.Sprintf("%s: %d permits on %s (%v)", m, n, r, err))
			}
		}
	}
	return left
}

// Lockers of every kind, over stores with and without Starter and Waiter,
// under injected delays, errors, lost replies and late landings, with
// contexts ending at random points and Shutdown racing the calls: every
// call returns within its context plus a few store timeouts, nothing is
// left held once Shutdown returned and the background cleanups ran, and
// the bubble ends (no goroutine is left blocked).
func TestChaos(t *testing.T) {
	for _, setup := range auditSetups(t) {
		name := setup().name
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(8) {
				t.Run(fmt.Sprint(seed), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						a := setup()
						a.exact = true
						auditRun(t, a, seed, 8, 12)
					})
				})
			}
		})
	}
}

// The same on the real scheduler: once every call returned and Shutdown
// completed, no goroutine of the library remains beyond the background
// cleanups, which end on timers within a second.
func TestChaosRealTime(t *testing.T) {
	before := faultkit.Goroutines()
	for _, setup := range auditSetups(t) {
		a := setup()
		t.Run(a.name, func(t *testing.T) { auditRun(t, a, 7, 4, 4) })
	}
	if leaked := before.Leaked(5 * time.Second); len(leaked) > 0 {
		t.Errorf("%d goroutines left after the lockers' calls returned and Shutdown completed; want none:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
}
