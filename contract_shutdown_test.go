package lock_test

// Waits, Shutdown and UnlockAll as the documentation promises them, seen
// from outside: what an outside review found the lockers and the memory
// store did otherwise.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Retry: between attempts, Lock on a store that can notify releases
// "waits for the resource to be released ... for at most the lock's TTL
// (or the delay, if longer)": a policy of a few attempts keeps its place
// in line for the release, like one that retries Forever, rather than
// polling at its delay.
func TestFiniteRetryWaitsForTheRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		holder := mustSingle(t, m, nil)
		held, err := holder.TryLock(ctx, "r", time.Hour)
		wantNil(t, "TryLock", err)
		go func() {
			time.Sleep(time.Minute)
			_ = holder.Unlock(ctx, held)
		}()
		l := mustSingle(t, m, nil)
		start := time.Now()
		_, err = l.Lock(ctx, "r", time.Hour, lock.WithRetry(lock.Retry{Attempts: 2, Delay: 10 * time.Millisecond}))
		if took := time.Since(start); err != nil || took != time.Minute {
			t.Errorf("Lock(held until a release after 1m, ttl 1h, Retry{Attempts: 2, Delay: 10ms}) = %v after %v; want the lock at the release", err, took)
		}
	})
}

// lock.Waiter: WaitRelease "blocks until it is released or expires", and a
// Lock waiting on a store that can notify is woken "when the lock is
// released instead of sleeping out its delay". The memory store arms a
// waiter's expiry timer with the expiry of the lock held when the wait
// began (stores/memory/wait.go, WaitRelease: left := e.expires - now); a
// later lock with a shorter TTL that expires unreleased wakes nobody, so
// a waiter sleeps on to the first lock's expiry (or its own bound, the
// TTL it asks for) while the resource is free.
func TestContractWaiterSeesLaterLocksExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		a, b, c := mustSingle(t, m, nil), mustSingle(t, m, nil), mustSingle(t, m, nil)
		ka, err := a.TryLock(ctx, "r", time.Hour)
		wantNil(t, "a TryLock", err)
		bc := make(chan error, 1)
		go func() { _, err := b.Lock(ctx, "r", time.Minute); bc <- err }() // b then "crashes" holding it
		synctest.Wait()
		cc := make(chan time.Time, 1)
		go func() {
			_, err := c.Lock(ctx, "r", time.Hour)
			if err != nil {
				t.Errorf("c Lock = %v", err)
			}
			cc <- time.Now()
		}()
		synctest.Wait()
		start := time.Now()
		wantNil(t, "a Unlock", a.Unlock(ctx, ka))
		wantNil(t, "b Lock", <-bc)
		// b's lock (1m TTL) expires unreleased at start+1m: c should get it then.
		got := <-cc
		if d := got.Sub(start); d > time.Minute+time.Second {
			t.Errorf("c got the lock %v after b's 1m lock was taken; want about 1m (it expired unreleased then)", d)
		}
	})
}

// SingleLocker.Shutdown (and MultiLocker's) "waits for the calls under way
// (each bounded by the store timeout)". A SingleLocker's store calls are
// bounded by the caller's context only (Options.StoreTimeout: "bounds each
// call to one store made by a MultiLocker"; single.go attempt passes ctx
// to the store as is), so a Shutdown whose context has no deadline waits
// as long as a stuck store call does — here an hour — and a Shutdown with
// a deadline gives up with the context's error and releases nothing it
// holds.
func TestContractShutdownWaitsForStuckSingleStoreCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		l := mustSingle(t, m, nil)
		held, err := l.TryLock(ctx, "held", time.Hour)
		wantNil(t, "TryLock(held)", err)
		_ = held
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour})
		go func() { _, _ = l.TryLock(ctx, "stuck", time.Hour) }()
		synctest.Wait()
		start := time.Now()
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		err = l.Shutdown(sctx)
		cancel()
		if took := time.Since(start); err != nil || took > 50*time.Millisecond {
			t.Errorf("Shutdown with a store call stuck = %v after %v; want nil within the store timeout (50ms)", err, took)
		}
		if ok, _ := m.Exists(ctx, "held"); ok {
			t.Errorf("Shutdown left %q locked", "held")
		}
		time.Sleep(2 * time.Hour)
	})
}

// Shutdown "releases every lock the locker holds", including the lock of a
// Run under way; but Run's function is told only at its next extension
// (up to a third of the TTL later: run.go keeper.run, the ErrClosed case),
// and until then its context is alive and FromContext(ctx).Valid() is true
// while the lock is free for anyone to take. Shutdown should end the
// contexts of the Runs (and election terms) whose locks it releases
// before releasing them — or, at the least, at once.
func TestContractShutdownLeavesRunFnBelievingItHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		l := mustSingle(t, m, nil)
		fctx, done := runUntilDone(ctx, l)
		wantNil(t, "Shutdown", l.Shutdown(ctx))
		other := mustSingle(t, m, nil)
		if _, err := other.TryLock(ctx, "r", time.Minute); err == nil {
			k, _ := lock.FromContext(fctx)
			if fctx.Err() == nil {
				t.Errorf("after Shutdown another took the lock while Run's function still runs with a live context (FromContext valid: %v)", k.Valid())
			}
		}
		<-done
	})
}

// The package doc promises that "a leader that checks its term's context
// before each action never acts while another leads". Shutdown (or
// UnlockAll) of the leader's locker releases the role at once, but the
// term's context stays alive until the next renewal finds the locker shut
// (up to a third of the TTL): another is elected meanwhile and both lead.
func TestContractShutdownTwoLeaders(t *testing.T) {
	for _, how := range []string{"Shutdown", "UnlockAll"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				m := memory.New()
				la, lb := mustSingle(t, m, nil), mustSingle(t, m, nil)
				ea, _ := lock.NewElection(la, "leader", 30*time.Second)
				eb, _ := lock.NewElection(lb, "leader", 30*time.Second)
				ta, err := ea.Campaign(ctx)
				wantNil(t, "Campaign(a)", err)
				if how == "Shutdown" {
					wantNil(t, "Shutdown(a's locker)", la.Shutdown(ctx))
				} else {
					wantNil(t, "UnlockAll(a's locker)", la.UnlockAll(ctx))
				}
				tb, err := eb.Campaign(ctx)
				wantNil(t, "Campaign(b)", err)
				if ta.Context().Err() == nil && tb.Context().Err() == nil {
					t.Errorf("after %s of a's locker, b is elected while a's term context is alive: two leaders", how)
				}
				_ = ta.Resign(ctx)
				_ = tb.Resign(ctx)
			})
		})
	}
}

// Shutdown of a Semaphore or of either side of a RWLocker ends the
// context of a Run under way on it before releasing its lock, as a
// locker's does; on the generic path (permits as plain locks) and the
// native one.
func TestContractShutdownEndsRunsOnDerivedLockers(t *testing.T) {
	for _, native := range []bool{true, false} {
		for _, kind := range []string{"semaphore", "reader", "writer"} {
			t.Run(fmt.Sprintf("%s native=%v", kind, native), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ctx := context.Background()
					var store lock.Store = memory.New()
					if !native {
						store = struct{ lock.Store }{store} // hides Permitter
					}
					base := mustSingle(t, store, nil)
					var l lock.Locker
					switch kind {
					case "semaphore":
						sem, err := lock.NewSemaphore(base, 2)
						wantNil(t, "NewSemaphore", err)
						l = sem
					default:
						rw, err := lock.NewRWLocker(base)
						wantNil(t, "NewRWLocker", err)
						l = rw.Reader()
						if kind == "writer" {
							l = rw.Writer()
						}
					}
					fctx, done := runUntilDone(ctx, l)
					wantNil(t, "Shutdown", l.Shutdown(ctx))
					if fctx.Err() == nil {
						t.Errorf("Shutdown of the %s returned while Run's function, whose lock it released, still has a live context", kind)
					} else if !errors.Is(context.Cause(fctx), lock.ErrLost) {
						t.Errorf("cause = %v; want ErrLost", context.Cause(fctx))
					}
					<-done
				})
			})
		}
	}
}

// runUntilDone starts a Run of l on "r" whose function waits for its
// context to end, and returns that context once the function runs, and
// Run's outcome.
func runUntilDone(ctx context.Context, l lock.Locker) (context.Context, <-chan error) {
	inside := make(chan context.Context)
	done := make(chan error, 1)
	go func() {
		done <- lock.Run(ctx, l, "r", 30*time.Second, func(ctx context.Context, _ lock.Lock) error {
			inside <- ctx
			<-ctx.Done()
			return nil
		})
	}()
	return <-inside, done
}

// "If ctx ends first, it releases them all the same, each release bounded
// by the store timeout, and returns ctx's error": also when ctx ends while
// Shutdown is releasing, not only while it waits for the calls under way.
// The locks after the release that ctx ended were sent with the ended ctx
// and left held until their TTL.
func TestContractShutdownCtxEndingDuringReleasesReleasesAll(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(fmt.Sprintf("multi=%v", multi), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stores := []*memory.Store{memory.New()}
				if multi {
					stores = append(stores, memory.New(), memory.New())
				}
				var l lock.Locker
				opts := &lock.Options{StoreTimeout: 200 * time.Millisecond}
				if multi {
					ss := make([]lock.Store, len(stores))
					for i, s := range stores {
						ss[i] = s
					}
					m, err := lock.NewMulti(ss, opts)
					if err != nil {
						t.Fatal(err)
					}
					l = m
				} else {
					s, err := lock.NewSingle(stores[0], opts)
					if err != nil {
						t.Fatal(err)
					}
					l = s
				}
				ctx := context.Background()
				for i := range 3 {
					if _, err := l.Lock(ctx, fmt.Sprint("r", i), time.Minute); err != nil {
						t.Fatal(err)
					}
				}
				// Each release takes 30ms (on the bubble's clock): Shutdown's
				// ctx ends during the second.
				for _, s := range stores {
					s.Inject(memory.Fault{Ops: memory.OpRelease, Delay: 30 * time.Millisecond, Times: memory.Always})
				}
				sctx, cancel := context.WithTimeout(ctx, 45*time.Millisecond)
				defer cancel()
				err := l.Shutdown(sctx)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Shutdown = %v, want ctx's error", err)
				}
				for _, s := range stores {
					s.ClearFaults()
				}
				for i := range 3 {
					if held, _ := l.IsLocked(ctx, fmt.Sprint("r", i)); held {
						t.Errorf("r%d still held after a Shutdown whose ctx ended while it released", i)
					}
				}
				// Past the lockers' background tries, which a bubble must
				// not end in (see stores/memory: Testing with it).
				time.Sleep(time.Second)
			})
		})
	}
}
