package redissuite

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

func (f Factory) testConformance(t *testing.T) {
	client := f.Client(t, redistest.Start(t))
	conformance.TestStore(t, func(t *testing.T) lock.Store { return f.On(t, client) }, nil)
}

func (f Factory) testConformanceCluster(t *testing.T) {
	client := f.Client(t, redistest.SharedCluster(t))
	conformance.TestStore(t, func(t *testing.T) lock.Store { return f.On(t, client) }, nil)
}

// testConformanceSentinel runs the kit through a client that finds the
// master through a Sentinel, on stores that also wait for the replica to
// have each lock.
func (f Factory) testConformanceSentinel(t *testing.T) {
	client := f.Client(t, redistest.StartSentinel(t))
	conformance.TestStore(t, func(t *testing.T) lock.Store {
		return f.On(t, client, redisstore.WithWaitReplicas(1, time.Second))
	}, nil)
}

// testTTLOfKeyWithoutTTL: a lock key without a TTL is not a lock of a
// store; TTL says so rather than reporting it held forever.
func (f Factory) testTTLOfKeyWithoutTTL(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("nottl:"))
	if err := srv.Do("SET", "nottl:{r}", "x").Error(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.TTL(ctxFor(t, 10*time.Second), "r"); err == nil || !strings.Contains(err.Error(), "no TTL") {
		t.Errorf("TTL of a key without a TTL = %v; want an error saying so", err)
	}
}

func (f Factory) testWaitFreeReturnsAtOnce(t *testing.T) {
	s := f.Server(t, redistest.Start(t))
	if err := s.WaitRelease(ctxFor(t, 10*time.Second), "free"); err != nil {
		t.Fatalf("WaitRelease of a free resource = %v; want nil", err)
	}
}

// fencedCycle takes r fenced and releases it, retrying calls that fail on
// connections a restart broke, and returns the fence.
func fencedCycle(t *testing.T, ctx context.Context, s Store, r string) uint64 {
	t.Helper()
	var fence uint64
	err := untilAnswered(func() (err error) {
		fence, err = s.AcquireFenced(ctx, r, "tok", time.Minute)
		return err
	})
	if err != nil {
		t.Fatalf("AcquireFenced(%s) = %v", r, err)
	}
	if err := untilAnswered(func() error { return s.Release(ctx, r, "tok") }); err != nil {
		t.Fatalf("Release(%s) = %v", r, err)
	}
	return fence
}

// testFencesIncrease: fences increase strictly per resource across
// releases, expiry, other resources' locks, and stores of other prefixes
// sharing the server's counter; and a counter behind the server's clock
// (as a promoted replica's may be) is lifted above it before its next
// fence.
func (f Factory) testFencesIncrease(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	other := f.Server(t, srv)
	ctx := ctxFor(t, 30*time.Second)
	var last uint64
	next := func(what string, fence uint64) {
		t.Helper()
		if fence <= last {
			t.Fatalf("fence %s = %d; want > %d", what, fence, last)
		}
		last = fence
	}
	next("first", fencedCycle(t, ctx, s, "r"))
	next("after a release", fencedCycle(t, ctx, s, "r"))
	fencedCycle(t, ctx, other, "r") // another prefix: another lock, the same counter
	fencedCycle(t, ctx, s, "x")
	next("after other locks", fencedCycle(t, ctx, s, "r"))
	if _, err := s.AcquireFenced(ctx, "r", "tok", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	eventually(t, "expired", func() bool { held, err := s.Exists(ctx, "r"); return err == nil && !held })
	next("after an expiry", fencedCycle(t, ctx, s, "r"))

	// A counter set back far below the clock: the next fence is lifted
	// above the clock, so above every fence the clock has passed (a lift
	// puts fences up to LiftAhead ahead of it: wait until it passed them).
	clockPasses(t, srv, last)
	if err := srv.Do("SET", redisstore.FenceKey, "5").Error(); err != nil {
		t.Fatal(err)
	}
	next("after the counter was set back", fencedCycle(t, ctx, s, "r"))
	clockPasses(t, srv, last)
	if err := srv.Do("DEL", redisstore.FenceKey).Error(); err != nil {
		t.Fatal(err)
	}
	next("after the counter was deleted", fencedCycle(t, ctx, s, "r"))
}

// testFencesBehindTheClock: a store that lifts the counter only when it
// finds it behind the server's clock (HoldLifts) finds so when the counter
// is set back below the clock after its last lift — through a blocking
// call and through Start alike — on one server, where it tells from its
// own reading of the server's clock, and on a cluster, where it asks.
func (f Factory) testFencesBehindTheClock(t *testing.T) {
	setBack := func(t *testing.T, s Store, srv *redistest.Server, counter string, last uint64) uint64 {
		t.Helper()
		ctx := ctxFor(t, 30*time.Second)
		redisstore.HoldLifts(f.Engine(s))
		last = max(last, fencedCycle(t, ctx, s, "r"))
		next := fencedCycle(t, ctx, s, "r")
		if next <= last {
			t.Fatalf("fence after %d = %d; want greater", last, next)
		}
		clockPasses(t, srv, next)
		if err := srv.Do("SET", counter, "5").Error(); err != nil {
			t.Fatal(err)
		}
		if got := fencedCycle(t, ctx, s, "r"); got <= next {
			t.Fatalf("AcquireFenced(r) after the counter was set back below the clock = %d; want > %d, the fence before", got, next)
		} else {
			next = got
		}
		clockPasses(t, srv, next)
		if err := srv.Do("SET", counter, "5").Error(); err != nil {
			t.Fatal(err)
		}
		type answer struct {
			fence uint64
			err   error
		}
		done := make(chan answer, 1)
		s.Start(ctx, lock.Call{Op: lock.CallAcquireFenced, Resource: "r", Token: "tok", TTL: time.Minute}, func(fence uint64, err error) {
			done <- answer{fence, err}
		})
		a := <-done
		if a.err != nil || a.fence <= next {
			t.Fatalf("Start(acquire fenced r) after the counter was set back below the clock = %d, %v; want > %d, the fence before", a.fence, a.err, next)
		}
		return a.fence
	}
	t.Run("server", func(t *testing.T) {
		srv := redistest.Start(t)
		setBack(t, f.Server(t, srv), srv, redisstore.FenceKey, 0)
	})
	t.Run("cluster", func(t *testing.T) {
		c := redistest.SharedCluster(t)
		s := f.Cluster(t, c, redisstore.WithPrefix("behind-the-clock:"))
		counter := redisstore.CounterKey(redisstore.LockKey("behind-the-clock:", "r"), true)
		last, _, err := s.LastFence(ctxFor(t, 10*time.Second), "r")
		if err != nil {
			t.Fatal(err)
		}
		setBack(t, s, c.MasterOf(t, redistest.Slot(counter)), counter, last)
	})
}

// testFencesAcrossRestart: a server that restarts without persistence
// loses its counter; fences handed out after the restart are still
// greater than those before, given what the package documentation
// requires of a restart: that it take longer than LiftAhead (the most a
// counter runs ahead of the clock). A local server restarts in less, and
// fences then repeat now and then, so the test waits that long.
func (f Factory) testFencesAcrossRestart(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, 30*time.Second)
	var before uint64
	for range 50 { // push the counter ahead of the clock as far as it goes
		before = fencedCycle(t, ctx, s, "r")
	}
	if err := srv.RestartAfter(redisstore.LiftAhead * time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if after := fencedCycle(t, ctx, s, "r"); after <= before {
		t.Fatalf("fence after a restart without persistence = %d; want > %d, the last before", after, before)
	}
}

// testFencesAfterPromotion: a master hands out a fence its replica never
// receives (the replica is cut off from replication first), and the
// replica is promoted (REPLICAOF NO ONE) with a counter behind: the next
// fence, on the promoted replica, is greater all the same.
func (f Factory) testFencesAfterPromotion(t *testing.T) {
	master, replica := redistest.Start(t), redistest.Start(t)
	if err := replica.Do("REPLICAOF", "127.0.0.1", strings.TrimPrefix(master.Addr(), "127.0.0.1:")).Error(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 30*time.Second)
	s := f.Server(t, master)
	first := fencedCycle(t, ctx, s, "r")
	eventually(t, "replicated", func() bool {
		v, err := replica.Do("GET", redisstore.FenceKey).AsInt64()
		return err == nil && uint64(v) >= first
	})
	// Cut the replica off: stop it, so that it cannot reconnect, and
	// drop its link.
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := master.Do("CLIENT", "KILL", "TYPE", "replica").Error(); err != nil {
		t.Fatal(err)
	}
	var lost uint64
	for range 20 {
		lost = fencedCycle(t, ctx, s, "r")
	}
	master.Kill()
	// A failover takes seconds (Sentinel, Cluster); the fences rely on
	// its taking longer than redisstore.LiftAhead, which this one is made
	// to take, and no longer.
	time.Sleep(redisstore.LiftAhead*time.Microsecond + 10*time.Millisecond)
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := replica.Do("REPLICAOF", "NO", "ONE").Error(); err != nil {
		t.Fatal(err)
	}
	if v, err := replica.Do("GET", redisstore.FenceKey).AsInt64(); err != nil || uint64(v) >= lost {
		t.Fatalf("the promoted replica's counter = %d, %v; want it behind the lost fence %d, or the test tests nothing", v, err, lost)
	}
	promoted := f.Server(t, replica)
	if next := fencedCycle(t, ctx, promoted, "r"); next <= lost {
		t.Fatalf("fence on the promoted replica = %d; want > %d, which the old master granted but never replicated", next, lost)
	}
}

// testFencesLeaveNothing: after fenced locks on many fresh names are
// released or expire, no key of theirs is left: fencing keeps no state
// per resource.
func (f Factory) testFencesLeaveNothing(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("fresh:"))
	ctx := ctxFor(t, 30*time.Second)
	const n = 500
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := fmt.Sprintf("job/%d", i)
			ttl := time.Minute
			if i%2 == 1 {
				ttl = 500 * time.Millisecond // left to expire
			}
			if _, err := s.AcquireFenced(ctx, r, "tok", ttl); err != nil {
				t.Errorf("AcquireFenced(%s) = %v", r, err)
				return
			}
			if i%2 == 0 {
				if err := s.Release(ctx, r, "tok"); err != nil {
					t.Errorf("Release(%s) = %v", r, err)
				}
			}
		}()
	}
	wg.Wait()
	eventually(t, "no key left", func() bool {
		keys, err := srv.Do("KEYS", "fresh:*").AsStrSlice()
		return err == nil && len(keys) == 0
	})
	if keys, err := srv.Do("KEYS", "*").AsStrSlice(); err != nil || len(keys) != 1 || keys[0] != redisstore.FenceKey {
		t.Errorf("keys after %d fenced locks on fresh names = %q, %v; want only the server's fence counter %s", n, keys, err, redisstore.FenceKey)
	}
}

// testRaiseFence: after RaiseFence(r, F), the next fence of r is greater
// than F, whether the counter was above or below it; fences above 2^53
// are refused before anything is sent.
func (f Factory) testRaiseFence(t *testing.T) {
	s := f.Server(t, redistest.Start(t))
	ctx := ctxFor(t, 30*time.Second)
	first := fencedCycle(t, ctx, s, "r")
	high := first + 1_000_000_000
	if err := s.RaiseFence(ctx, "r", high); err != nil {
		t.Fatalf("RaiseFence(r, %d) = %v", high, err)
	}
	if next := fencedCycle(t, ctx, s, "r"); next <= high {
		t.Fatalf("fence after RaiseFence(%d) = %d; want greater", high, next)
	}
	if err := s.RaiseFence(ctx, "r", 1); err != nil {
		t.Fatalf("RaiseFence below the counter = %v", err)
	}
	if next := fencedCycle(t, ctx, s, "r"); next <= high {
		t.Fatalf("fence after a RaiseFence below the counter = %d; want > %d: raising never lowers", next, high)
	}
	if err := s.RaiseFence(ctx, "r", 1<<60); !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("RaiseFence(2^60) = %v; want lock.ErrInvalid", err)
	}
	// Through Start, as a MultiLocker raises its stores.
	if errs := startAll(t, s, ctx, []lock.Call{{Op: lock.CallRaiseFence, Resource: "r", Fence: high * 2}}); errs[0] != nil {
		t.Fatalf("Start(raise fence) = %v", errs[0])
	}
	if next := fencedCycle(t, ctx, s, "r"); next <= high*2 {
		t.Fatalf("fence after a started raise to %d = %d; want greater", high*2, next)
	}
}

// testRestartGuardRefusesLongTTLs: under WithRestartGuard(maxTTL), a TTL
// above maxTTL would outlive the guard: Acquire, AcquireFenced, Extend
// and Start refuse it with lock.ErrInvalid naming both, sending nothing.
func (f Factory) testRestartGuardRefusesLongTTLs(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithRestartGuard(time.Second))
	ctx := ctxFor(t, 10*time.Second)
	check := func(call string, err error) {
		t.Helper()
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "1h0m0s") || !strings.Contains(err.Error(), "1s") {
			t.Errorf("%s with a 1h TTL under a 1s guard = %v; want lock.ErrInvalid naming both", call, err)
		}
	}
	check("Acquire", s.Acquire(ctx, "r", "tok", time.Hour))
	_, err := s.AcquireFenced(ctx, "r", "tok", time.Hour)
	check("AcquireFenced", err)
	check("Extend", s.Extend(ctx, "r", "tok", time.Hour))
	check("Start(acquire)", startAll(t, s, ctx, []lock.Call{{Op: lock.CallAcquire, Resource: "r", Token: "tok", TTL: time.Hour}})[0])
	if v, err := srv.Do("EXISTS", redisstore.GuardKey).AsInt64(); err != nil || v != 0 {
		t.Errorf("the guard's marker exists (%d, %v): something was sent", v, err)
	}
}

// testStartOwnDeadlines: a started call is answered by its own deadline,
// not by that of another call in its batch. Calls with a short deadline
// are started together with calls with a long one on a server that
// answers slowly (a script that sleeps delays every command after it):
// the short ones fail, the long ones succeed.
func (f Factory) testStartOwnDeadlines(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, 30*time.Second)
	for round := range 5 {
		// Stall the server for 300ms, so the calls queue up behind it.
		stalled := make(chan error, 1)
		go func() { stalled <- srv.DebugSleep(300 * time.Millisecond) }()
		time.Sleep(20 * time.Millisecond)
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		var calls []lock.Call
		var ctxs []context.Context
		for i := range 20 {
			c := ctx
			if i%2 == 0 {
				c = short
			}
			calls = append(calls, lock.Call{Op: lock.CallAcquire, Resource: fmt.Sprintf("r%d-%d", round, i), Token: "tok", TTL: time.Minute})
			ctxs = append(ctxs, c)
		}
		errs := startEach(t, s, ctxs, calls)
		cancel()
		if err := <-stalled; err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			if i%2 == 1 && err != nil {
				t.Errorf("round %d: Start with a 30s deadline, batched with 50ms ones, on a server stalled 300ms = %v; want nil", round, err)
			}
			if i%2 == 0 && (errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld)) {
				t.Errorf("round %d: Start with a 50ms deadline = %v; want no lock outcome", round, err)
			}
		}
	}
}

// startEach starts each call with its own context, all at once, and
// returns their outcomes in order.
func startEach(t *testing.T, s Store, ctxs []context.Context, calls []lock.Call) []error {
	t.Helper()
	errs := make([]error, len(calls))
	var answered sync.WaitGroup
	answered.Add(len(calls))
	for i, c := range calls {
		go s.Start(ctxs[i], c, func(_ uint64, err error) {
			errs[i] = err
			answered.Done()
		})
	}
	done := make(chan struct{})
	go func() { answered.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("started calls not all answered after 30s")
	}
	return errs
}

// testStartFenced: fenced acquisitions started together, on many
// resources, each get a fence, all distinct and greater than the fences
// before; a started fenced acquisition of a held lock is refused.
func (f Factory) testStartFenced(t *testing.T) {
	s := f.Server(t, redistest.Start(t))
	ctx := ctxFor(t, 30*time.Second)
	before := fencedCycle(t, ctx, s, "before")
	const n = 50
	fences := make([]uint64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		s.Start(ctx, lock.Call{Op: lock.CallAcquireFenced, Resource: fmt.Sprintf("r%d", i%25), Token: fmt.Sprint(i), TTL: time.Minute}, func(fence uint64, err error) {
			fences[i], errs[i] = fence, err
			wg.Done()
		})
	}
	wg.Wait()
	seen := make(map[uint64]bool)
	granted := 0
	for i := range n {
		switch {
		case errors.Is(errs[i], lock.ErrNotAcquired):
			if fences[i] != 0 {
				t.Errorf("refused call %d answered fence %d; want 0", i, fences[i])
			}
		case errs[i] != nil:
			t.Errorf("Start(acquire fenced) %d = %v", i, errs[i])
		case fences[i] <= before || seen[fences[i]]:
			t.Errorf("Start(acquire fenced) %d: fence %d, after %d; want greater and unique", i, fences[i], before)
		default:
			granted++
			seen[fences[i]] = true
		}
	}
	if granted != 25 {
		t.Errorf("%d of 50 started fenced acquisitions of 25 resources granted; want 25", granted)
	}
}

// testCanceledLockLeavesNothing: Lock calls whose context is canceled
// while their acquisition is on its way leave no lock behind once they
// return: the cleanup release the locker sends must not overtake the
// acquisition it undoes (issue 20, item 11).
func (f Factory) testCanceledLockLeavesNothing(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("cancel:"))
	l, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 60*time.Second)
	canceled := 0
	for i := range 3000 {
		lctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(time.Duration(i%40)*5*time.Microsecond, cancel)
		held, err := l.Lock(lctx, fmt.Sprintf("r%d", i), 10*time.Second)
		cancel()
		if err == nil {
			if err := l.Unlock(ctx, held); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Lock = %v", err)
		}
		canceled++
	}
	keys, err := srv.Do("KEYS", "cancel:*").AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Errorf("%d of %d canceled Lock calls left their lock held: %v", len(keys), canceled, keys[:min(len(keys), 5)])
	}
	t.Logf("%d of 3000 Lock calls canceled", canceled)
}

// testReleaseHandsOff: a Release that wakes a waiter hands it the lock,
// through either adapter: the lock is reserved for the waiter's
// subscription, refused to every other caller (the releaser too), read as
// held without a holder part, and taken by the waiter's acquisition —
// fenced or not. A permit's release records a head start instead (see
// redisstore's handoffs); a release that wakes nobody does neither.
func (f Factory) testReleaseHandsOff(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		t.Run(fmt.Sprintf("fenced=%v", fenced), func(t *testing.T) {
			srv := redistest.Start(t)
			ctx := ctxFor(t, 30*time.Second)
			releaser := f.Server(t, srv, redisstore.WithPrefix("handoff:"))
			waiter := f.Server(t, srv, redisstore.WithPrefix("handoff:"))
			redisstore.SetReservationTTL(f.Engine(releaser), time.Minute) // not to lapse under load
			if err := releaser.Acquire(ctx, "r", "a", time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := releaser.Release(ctx, "r", "a"); err != nil {
				t.Fatal(err)
			}
			if n, err := srv.Do("EXISTS", "handoff:{r}").AsInt64(); err != nil || n != 0 {
				t.Fatalf("EXISTS of the lock after a release that woke nobody = %d, %v; want 0", n, err)
			}
			if err := releaser.Acquire(ctx, "r", "a", time.Minute); err != nil {
				t.Fatal(err)
			}
			woken := make(chan error, 1)
			go func() { woken <- waiter.WaitRelease(ctx, "r") }()
			waitersInLine(t, srv, "handoff:{r}", 1)
			id, err := srv.Do("LINDEX", "handoff:{r}:waiters", "0").ToString()
			if err != nil {
				t.Fatal(err)
			}
			if err := releaser.Release(ctx, "r", "a"); err != nil {
				t.Fatal(err)
			}
			if got, err := srv.Do("GET", "handoff:{r}").ToString(); err != nil || got != redisstore.ReservationPrefix+id {
				t.Fatalf("the lock after a release that woke a waiter holds %q, %v; want %q: reserved for the waiter", got, err, redisstore.ReservationPrefix+id)
			}
			if err := releaser.Acquire(ctx, "r", "b", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
				t.Fatalf("Acquire(r, b) by the releaser while the lock is reserved for a woken waiter = %v; want ErrNotAcquired", err)
			}
			if who, held, err := releaser.Holder(ctx, "r"); err != nil || who != "" || !held {
				t.Fatalf("Holder(r) while reserved = %q, %v, %v; want \"\", true, nil", who, held, err)
			}
			if err := <-woken; err != nil {
				t.Fatalf("WaitRelease = %v", err)
			}
			if fenced {
				if _, err := waiter.AcquireFenced(ctx, "r", "w", time.Minute); err != nil {
					t.Fatalf("the woken waiter's AcquireFenced(r, w) = %v; want nil", err)
				}
			} else if err := waiter.Acquire(ctx, "r", "w", time.Minute); err != nil {
				t.Fatalf("the woken waiter's Acquire(r, w) = %v; want nil", err)
			}
			if got, err := srv.Do("GET", "handoff:{r}").ToString(); err != nil || got != "w" {
				t.Fatalf("the lock after the woken waiter's acquisition holds %q, %v; want \"w\"", got, err)
			}
			if n := redisstore.PendingHandoffs(f.Engine(releaser)); n != 0 {
				t.Fatalf("a release that reserved the lock recorded %d head starts; want 0", n)
			}
		})
	}
	t.Run("permit", func(t *testing.T) {
		srv := redistest.Start(t)
		ctx := ctxFor(t, 30*time.Second)
		releaser := f.Server(t, srv, redisstore.WithPrefix("handoff:"))
		waiter := f.Server(t, srv, redisstore.WithPrefix("handoff:"))
		if _, err := releaser.AcquirePermit(ctx, "r", "a", 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		woken := make(chan error, 1)
		go func() { woken <- waiter.WaitPermit(ctx, "r") }()
		waitersInLine(t, srv, redisstore.PermitsKey("handoff:", "r"), 1)
		if err := releaser.ReleasePermit(ctx, "r", "a"); err != nil {
			t.Fatal(err)
		}
		if err := <-woken; err != nil {
			t.Fatalf("WaitPermit = %v", err)
		}
		if n := redisstore.PendingHandoffs(f.Engine(releaser)); n != 1 {
			t.Fatalf("a permit's release that woke a waiter recorded %d head starts; want 1", n)
		}
	})
}

// testWokenWaiterKeepsItsTurn: a waiter that a release woke, but that
// finds the lock taken by a caller that did not wait in line (the
// reservation the release made for it lapsed first), gets back in line at
// the front: the next release wakes it, not the waiter that was behind it
// (issue 14: waiters lost their place under contention).
func (f Factory) testWokenWaiterKeepsItsTurn(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("turn:"))
	a := f.Server(t, srv, redisstore.WithPrefix("turn:"))
	b := f.Server(t, srv, redisstore.WithPrefix("turn:"))
	redisstore.SetReservationTTL(f.Engine(holder), time.Minute) // it lapses when the test says
	wait := func(s Store) <-chan error {
		done := make(chan error, 1)
		go func() { done <- s.WaitRelease(ctx, "r") }()
		return done
	}
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	aDone := wait(a)
	waitersInLine(t, srv, "turn:{r}", 1)
	bDone := wait(b)
	waitersInLine(t, srv, "turn:{r}", 2)
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	if err := <-aDone; err != nil {
		t.Fatalf("the first waiter's WaitRelease = %v", err)
	}
	// The reservation lapses before the woken waiter acquires (as under
	// a long pause: DEL stands for it), and a caller that did not wait
	// takes the lock.
	if err := holder.Acquire(ctx, "r", "barger", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("a barger's Acquire while the lock is reserved for the woken waiter = %v; want ErrNotAcquired", err)
	}
	if err := srv.Do("DEL", "turn:{r}").Error(); err != nil {
		t.Fatal(err)
	}
	if err := holder.Acquire(ctx, "r", "barger", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := a.Acquire(ctx, "r", "a", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("the woken waiter's Acquire after a barger = %v; want ErrNotAcquired", err)
	}
	aDone = wait(a) // back in line: at the front
	waitersInLine(t, srv, "turn:{r}", 2)
	if first, err := srv.Do("LINDEX", "turn:{r}:waiters", "0").ToString(); err != nil {
		t.Fatal(err)
	} else if last, _ := srv.Do("LINDEX", "turn:{r}:waiters", "1").ToString(); first == last {
		t.Fatalf("waiters' queue holds %q twice", first)
	}
	if err := holder.Release(ctx, "r", "barger"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-aDone:
		if err != nil {
			t.Fatalf("the woken waiter's second WaitRelease = %v", err)
		}
	case err := <-bDone:
		t.Fatalf("the release woke the second waiter (%v), not the first, which had lost its turn to a barger", err)
	case <-time.After(10 * time.Second):
		t.Fatal("nobody woken 10s after the release")
	}
	// Having taken its turn, the first waiter no longer goes to the front.
	if err := a.Acquire(ctx, "r", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if err := <-bDone; err != nil {
		t.Fatalf("the second waiter's WaitRelease = %v", err)
	}
}

// testUnclaimedReservationLapses: a waiter that a release woke but that
// never takes the lock (its process died, or its caller gave up) holds
// up the others only until the reservation lapses: the next in line is
// woken (by its own look at the lock once the reservation's TTL is up)
// and takes it.
func (f Factory) testUnclaimedReservationLapses(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("lapse:"))
	gone := f.Server(t, srv, redisstore.WithPrefix("lapse:"))
	next := f.Server(t, srv, redisstore.WithPrefix("lapse:"))
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	goneDone, nextDone := make(chan error, 1), make(chan error, 1)
	go func() { goneDone <- gone.WaitRelease(ctx, "r") }()
	waitersInLine(t, srv, "lapse:{r}", 1)
	go func() { nextDone <- next.WaitRelease(ctx, "r") }()
	waitersInLine(t, srv, "lapse:{r}", 2)
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	if err := <-goneDone; err != nil {
		t.Fatalf("the first waiter's WaitRelease = %v", err)
	}
	// The first waiter never acquires. The second must get the lock all
	// the same, once the reservation lapses.
	select {
	case err := <-nextDone:
		if err != nil {
			t.Fatalf("the second waiter's WaitRelease = %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the second waiter still waits: a reservation nobody claimed held the lock")
	}
	for {
		err := next.Acquire(ctx, "r", "n", time.Minute)
		if err == nil {
			break
		}
		if !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("the second waiter's Acquire = %v", err)
		}
		// Woken by a look while the reservation was still there: wait again.
		if err := next.WaitRelease(ctx, "r"); err != nil {
			t.Fatalf("the second waiter's WaitRelease = %v", err)
		}
	}
}

// testConformanceBeforeRedis7 runs the kit, and the WRONGTYPE checks, on
// stores that speak as they do to a server before Redis 7.0: a refusal
// read with GET, every fence lifted by a script.
func (f Factory) testConformanceBeforeRedis7(t *testing.T) {
	srv := redistest.Start(t)
	client := f.Client(t, srv)
	old := func(t testing.TB, opts ...redisstore.Option) Store {
		s := f.On(t, client, opts...)
		redisstore.WithoutRedis7(f.Engine(s))
		return s
	}
	conformance.TestStore(t, func(t *testing.T) lock.Store { return old(t) }, nil)
	s := old(t, redisstore.WithPrefix("wt6:"))
	if err := srv.Do("LPUSH", "wt6:{r}", "x").Error(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 10*time.Second)
	if err := s.Acquire(ctx, "r", "tok", time.Second); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("Acquire on a list = %v; want a WRONGTYPE error", err)
	}
	if _, err := s.AcquireFenced(ctx, "r", "tok", time.Second); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("AcquireFenced on a list = %v; want a WRONGTYPE error", err)
	}
}

// clockPasses waits until the server's clock, in microseconds, passes
// fence.
func clockPasses(t *testing.T, srv *redistest.Server, fence uint64) {
	t.Helper()
	eventually(t, "past the fence on the server's clock", func() bool {
		tm, err := srv.Do("TIME").AsStrSlice()
		if err != nil || len(tm) != 2 {
			return false
		}
		sec, _ := strconv.ParseUint(tm[0], 10, 64)
		us, _ := strconv.ParseUint(tm[1], 10, 64)
		return sec*1_000_000+us > fence
	})
}
