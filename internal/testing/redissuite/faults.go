package redissuite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
)

const faultRetryDelay = 5 * time.Millisecond

var faultRetry = lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: faultRetryDelay, MaxDelay: 50 * time.Millisecond})

// section is a critical section shared by workers: it counts overlaps,
// and increments a counter non-atomically (load, pause, store), so a lost
// update shows that two holders were inside at once.
type section struct {
	inside   atomic.Int32
	overlaps atomic.Int32
	counter  atomic.Int64
}

func (s *section) enter() {
	if s.inside.Add(1) > 1 {
		s.overlaps.Add(1)
	}
	c := s.counter.Load()
	time.Sleep(100 * time.Microsecond)
	s.counter.Store(c + 1)
	s.inside.Add(-1)
}

func (s *section) check(t *testing.T, entered int64) {
	t.Helper()
	if n := s.overlaps.Load(); n != 0 {
		t.Errorf("%d times a worker entered the critical section while another was inside; want 0", n)
	}
	if got := s.counter.Load(); got != entered {
		t.Errorf("counter = %d after %d locked increments; want %d: updates were lost", got, entered, entered)
	}
}

// redlock returns n independent masters, a store on each, and a
// MultiLocker over them with the given per-store timeout.
func (f Factory) redlock(t *testing.T, n int, storeTimeout time.Duration) ([]*redistest.Server, []lock.Store, *lock.MultiLocker) {
	t.Helper()
	servers := redistest.StartN(t, n)
	stores := make([]lock.Store, n)
	for i, srv := range servers {
		stores[i] = f.Server(t, srv)
	}
	l, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: storeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	return servers, stores, l
}

// storeNames returns the names of the failed stores in a locker error.
func storeNames(err error) []string {
	var lerr *lock.Error
	if !errors.As(err, &lerr) {
		return nil
	}
	var names []string
	for _, s := range lerr.Stores {
		if !errors.Is(s.Err, lock.ErrNotAcquired) && !errors.Is(s.Err, lock.ErrNotHeld) {
			names = append(names, s.Store)
		}
	}
	return names
}

func names(stores []lock.Store, idx ...int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, fmt.Sprint(stores[i]))
	}
	return out
}

// worker takes the lock and enters the section rounds times, reporting
// unexpected errors through fail.
func worker(ctx context.Context, l lock.Locker, resource string, sec *section, rounds int, unlockErr func(error) bool, fail func(string, ...any)) {
	for range rounds {
		held, err := l.Lock(ctx, resource, 5*time.Second, faultRetry)
		if err != nil {
			fail("Lock = %v; want nil", err)
			return
		}
		sec.enter()
		if err := l.Unlock(ctx, held); err != nil && !unlockErr(err) {
			fail("Unlock = %v", err)
		}
	}
}

func (f Factory) testRedlockContention(t *testing.T) {
	_, _, l := f.redlock(t, 5, redlockStoreTimeout)
	ctx := ctxFor(t, 60*time.Second)
	const workers, rounds = 16, 20
	var sec section
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker(ctx, l, "counter", &sec, rounds, func(error) bool { return false }, t.Errorf)
		}()
	}
	wg.Wait()
	sec.check(t, workers*rounds)
}

func (f Factory) testRedlockKillTwoOfFive(t *testing.T) {
	servers, stores, l := f.redlock(t, 5, redlockStoreTimeout)
	ctx := ctxFor(t, 60*time.Second)
	dead := names(stores, 1, 3)
	var killed atomic.Bool
	var unlockFailures atomic.Int32
	// After the kill, an Unlock may fail on the dead stores (or on a live
	// one answering late under load), but never report the lock not held:
	// a quorum of live stores still held it.
	unlockErr := func(err error) bool {
		if !killed.Load() || !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotHeld) {
			return false
		}
		if got := storeNames(err); !slices.ContainsFunc(got, func(n string) bool { return slices.Contains(dead, n) }) {
			t.Logf("Unlock failed on live stores only: %v", err)
		}
		unlockFailures.Add(1)
		return true
	}
	const workers, rounds = 16, 20
	var sec section
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker(ctx, l, "counter", &sec, rounds, unlockErr, t.Errorf)
		}()
	}
	eventually(t, "a quarter of the way", func() bool { return sec.counter.Load() >= workers*rounds/4 })
	killed.Store(true) // from now on, unlocks may fail on the dying stores
	servers[1].Kill()
	servers[3].Kill()
	before := sec.counter.Load()
	wg.Wait()
	sec.check(t, workers*rounds)
	if after := sec.counter.Load() - before; after < workers*rounds/2 {
		t.Errorf("only %d locks granted after 2 of 5 stores died; want the rest (%d or more)", after, workers*rounds/2)
	}
	t.Logf("%d unlocks reported the dead stores", unlockFailures.Load())
}

func (f Factory) testRedlockKillThreeOfFive(t *testing.T) {
	servers, stores, l := f.redlock(t, 5, redlockStoreTimeout)
	ctx := ctxFor(t, 60*time.Second)
	deadIdx := []int{0, 2, 4}
	dead := names(stores, deadIdx...)
	var killed atomic.Bool
	var sec section
	var falseSuccess, failedAfter atomic.Int32
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	defer halt() // also when the test fails early: no worker outlives it
	const workers = 16
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				afterKill := killed.Load()
				held, err := l.Lock(ctx, "counter", 5*time.Second, lock.WithRetry(lock.Retry{Attempts: 3, Delay: faultRetryDelay}))
				if err != nil {
					if !afterKill {
						// Attempts racing with the kill may fail either way.
						continue
					}
					failedAfter.Add(1)
					if !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotAcquired) {
						t.Errorf("worker %d: Lock after 3 of 5 stores died = %v; want lock.ErrUnavailable", w, err)
					}
					continue
				}
				if afterKill {
					falseSuccess.Add(1)
				}
				sec.enter()
				_ = l.Unlock(ctx, held) // may fail on stores dying meanwhile
			}
		}()
	}
	eventually(t, "making progress", func() bool { return sec.counter.Load() >= 50 })
	for _, i := range deadIdx {
		servers[i].Kill()
	}
	killed.Store(true)
	eventually(t, "failing after the kill", func() bool { return failedAfter.Load() >= 3*workers })
	halt()
	sec.check(t, sec.counter.Load())
	if n := falseSuccess.Load(); n != 0 {
		t.Errorf("%d locks granted after 3 of 5 stores died; want 0: a minority cannot grant a lock", n)
	}

	// An attempt alone names exactly the dead stores.
	_, err := l.TryLock(ctx, "counter", 5*time.Second)
	if !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("TryLock with 3 of 5 stores dead = %v; want lock.ErrUnavailable", err)
	}
	if got := storeNames(err); !slices.Equal(got, dead) {
		t.Errorf("TryLock error %q names failed stores %q; want the dead ones %q", err, got, dead)
	}

	for _, i := range deadIdx {
		if err := servers[i].Restart(); err != nil {
			t.Fatal(err)
		}
	}
	// Available again once every client has reconnected (how soon varies
	// by client: go-redis probes a server it failed to dial once a
	// second): the restarted stores are empty, the live ones hold nothing
	// from the failed attempts.
	for i, s := range stores {
		eventually(t, fmt.Sprintf("answering through %v after the restart", s), func() bool {
			_, err := stores[i].Exists(ctx, "counter")
			return err == nil
		})
	}
	held, err := l.Lock(ctx, "counter", 5*time.Second, faultRetry)
	if err != nil {
		t.Fatalf("Lock after restarting the dead stores = %v; want nil", err)
	}
	if err := l.Unlock(ctx, held); err != nil {
		t.Fatalf("Unlock after restart = %v", err)
	}
}

func (f Factory) testRedlockPausedMaster(t *testing.T) {
	// Long enough that the four live stores answer in time on a loaded
	// machine: the quorum returns as soon as they have, whatever it is.
	const storeTimeout = time.Second
	servers, _, l := f.redlock(t, 5, storeTimeout)
	ctx := ctxFor(t, 60*time.Second)
	if err := servers[2].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = servers[2].Resume() })
	bound := storeTimeout + time.Second // generous: this checks for a hang, not speed
	var slowest time.Duration
	for i := range 20 {
		start := time.Now()
		held, err := l.TryLock(ctx, fmt.Sprintf("r%d", i%3), 5*time.Second)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("TryLock %d with 1 of 5 stores paused = %v; want nil", i, err)
		}
		slowest = max(slowest, took)
		if took > bound {
			t.Errorf("TryLock %d took %v with a store paused; want under %v (the store timeout bounds it)", i, took, bound)
		}
		start = time.Now()
		err = l.Unlock(ctx, held)
		if took := time.Since(start); took > bound {
			t.Errorf("Unlock %d took %v with a store paused; want under %v", i, took, bound)
		}
		if err != nil {
			t.Errorf("Unlock %d with 1 of 5 stores paused = %v; want nil: a quorum released it", i, err)
		}
	}
	t.Logf("slowest TryLock with a store paused: %v (store timeout %v)", slowest, storeTimeout)
}

// testScriptFlushDuringWorkload flushes the script cache again and again
// while workers lock, extend, wait and unlock: no operation may fail.
func (f Factory) testScriptFlushDuringWorkload(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	l, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 60*time.Second)
	stop := make(chan struct{})
	flushes := make(chan int)
	go func() {
		n := 0
		defer func() { flushes <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if err := srv.Do("SCRIPT", "FLUSH").Error(); err != nil {
				t.Errorf("SCRIPT FLUSH = %v", err)
				return
			}
			n++
		}
	}()
	const workers, rounds = 8, 40
	var sec section
	var ops atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				resource := "shared"
				if i%2 == 1 {
					resource = fmt.Sprintf("own%d", w)
				}
				held, err := l.Lock(ctx, resource, 5*time.Second, faultRetry)
				if err != nil {
					t.Errorf("Lock = %v", err)
					return
				}
				if resource == "shared" {
					sec.enter()
				}
				if held, err = l.Extend(ctx, held, 5*time.Second); err != nil {
					t.Errorf("Extend = %v", err)
					return
				}
				if err := l.Unlock(ctx, held); err != nil {
					t.Errorf("Unlock = %v", err)
					return
				}
				ops.Add(3)
			}
		}()
	}
	wg.Wait()
	close(stop)
	n := <-flushes
	sec.check(t, workers*rounds/2)
	if got := ops.Load(); got != 3*workers*rounds {
		t.Errorf("%d of %d operations succeeded during SCRIPT FLUSHes; want all", got, 3*workers*rounds)
	}
	if n < 5 {
		t.Errorf("only %d SCRIPT FLUSHes ran during the workload; the test did not test much", n)
	}
	t.Logf("%d operations, %d SCRIPT FLUSHes", ops.Load(), n)
}

// testClusterFailoverDuringContention fails the lock's slot over to its
// replica while workers contend for the lock: no two may hold it at once.
func (f Factory) testClusterFailoverDuringContention(t *testing.T) {
	c := redistest.SharedCluster(t)
	s := f.Cluster(t, c)
	l, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 90*time.Second)
	const resource = "failover"
	slot := redistest.Slot(fmt.Sprintf("%s{%s}", "", resource))
	var sec section
	var entered atomic.Int64
	var failedOver atomic.Bool
	var afterFailover atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const workers = 8
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// A short TTL: an Unlock lost in the failover frees the
				// lock soon.
				held, err := l.Lock(ctx, resource, time.Second, faultRetry)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("worker %d: Lock = %v", w, err)
					}
					return
				}
				sec.enter()
				entered.Add(1)
				if failedOver.Load() {
					afterFailover.Add(1)
				}
				if err := l.Unlock(ctx, held); err != nil && !errors.Is(err, lock.ErrUnavailable) && !errors.Is(err, lock.ErrNotHeld) {
					t.Errorf("worker %d: Unlock = %v", w, err)
				}
			}
		}()
	}
	eventually(t, "making progress", func() bool { return entered.Load() >= 50 })
	c.Failover(t, slot)
	failedOver.Store(true)
	eventually(t, "making progress after the failover", func() bool { return afterFailover.Load() >= 50 })
	close(stop)
	wg.Wait()
	sec.check(t, entered.Load())
	t.Logf("%d critical sections, %d after the failover", entered.Load(), afterFailover.Load())
}

// testFaults runs the fault scenarios.
func (f Factory) testFaults(t *testing.T) {
	t.Run("RedlockContention", f.testRedlockContention)
	t.Run("RedlockKillTwoOfFive", f.testRedlockKillTwoOfFive)
	t.Run("RedlockKillThreeOfFive", f.testRedlockKillThreeOfFive)
	t.Run("RedlockPausedMaster", f.testRedlockPausedMaster)
	t.Run("ScriptFlushDuringWorkload", f.testScriptFlushDuringWorkload)
	t.Run("ClusterFailoverDuringContention", f.testClusterFailoverDuringContention)
}

// eventually polls cond every 10ms for at most 5s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 5s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// redlockStoreTimeout is the store timeout of the Redlock scenarios that
// do not measure latency: generous, so that a loaded machine (the race
// detector, other jobs) does not turn a slow answer into a failed store.
const redlockStoreTimeout = time.Second
