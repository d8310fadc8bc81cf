package lock_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
	"github.com/lockkit/lock/tokengen"
)

// releaser is a SpanHook that calls UnlockAll on the locker once, at the
// first event of kind at, or as the first call of op begins: it puts
// UnlockAll exactly in the windows where a holder had no keeper yet (its
// Lock returned the lock) or no longer had one (it was done, its release
// not yet sent).
type releaser struct {
	locker lock.Locker
	at     lock.EventKind
	op     string
	fired  atomic.Bool
	err    error
}

// fire calls UnlockAll, once: its own calls, which the hook sees too, do
// not call it again.
func (r *releaser) fire() {
	if r.fired.CompareAndSwap(false, true) {
		r.err = r.locker.UnlockAll(context.Background())
	}
}

func (r *releaser) Observe(_ context.Context, e lock.Event) {
	if r.at != 0 && e.Kind == r.at {
		r.fire()
	}
}

func (r *releaser) Begin(ctx context.Context, op, _ string) context.Context {
	if r.op != "" && op == r.op {
		r.fire()
	}
	return ctx
}

// TestUnlockAllAsHolderStarts: UnlockAll releasing a lock that Lock has
// just taken for Run, RunOnce or an election, before their keeper was
// recorded, ends the holder's context before it may act (it used to stay
// live until the first extension, while another took the lock).
func TestUnlockAllAsHolderStarts(t *testing.T) {
	ctx := context.Background()
	for _, holder := range []string{"Run", "RunOnce", "Campaign", "Run on a Semaphore", "Run on a wrapper renaming"} {
		t.Run(holder, func(t *testing.T) {
			store := memory.New()
			r := &releaser{at: lock.EventAcquired}
			l := mustSingle(t, store, &lock.Options{Hook: r})
			r.locker = l
			other := mustSingle(t, store, nil)
			var acted bool
			fn := func(ctx context.Context) {
				if ctx.Err() == nil {
					acted = true
					t.Errorf("%s: fn's context is live after UnlockAll released its lock", holder)
				}
				if cur, ok := lock.FromContext(ctx); !ok || cur.Valid() {
					t.Errorf("%s: FromContext(ctx) = %v, %v; want a lock no longer valid", holder, cur, ok)
				}
				if !errors.Is(context.Cause(ctx), lock.ErrLost) {
					t.Errorf("%s: fn's context's cause = %v; want ErrLost", holder, context.Cause(ctx))
				}
			}
			var got error
			switch holder {
			case "Run":
				got = lock.Run(ctx, l, "r", time.Minute, func(ctx context.Context, _ lock.Lock) error { fn(ctx); return nil })
			case "RunOnce":
				got = lock.RunOnce(ctx, l, "r", time.Minute, func(ctx context.Context, _ lock.Lock) error { fn(ctx); return nil })
			case "Campaign":
				e, err := lock.NewElection(l, "r", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				term, err := e.Campaign(ctx)
				if err != nil {
					t.Fatalf("Campaign = %v", err)
				}
				fn(term.Context())
				got = term.Resign(ctx)
			case "Run on a Semaphore":
				sem, err := lock.NewSemaphore(l, 2)
				if err != nil {
					t.Fatal(err)
				}
				got = lock.Run(ctx, sem, "r", time.Minute, func(ctx context.Context, _ lock.Lock) error { fn(ctx); return nil })
			case "Run on a wrapper renaming":
				got = lock.Run(ctx, renaming{l, "tenant/"}, "r", time.Minute, func(ctx context.Context, _ lock.Lock) error { fn(ctx); return nil })
			}
			if r.err != nil {
				t.Fatalf("UnlockAll = %v", r.err)
			}
			if !errors.Is(got, lock.ErrLost) {
				t.Errorf("%s = %v; want ErrLost (UnlockAll released the lock)", holder, got)
			}
			if acted {
				if _, err := other.TryLock(ctx, "r", time.Minute); err == nil {
					t.Errorf("%s: another locker took the lock while fn's context was live", holder)
				}
			}
		})
	}
}

// TestUnlockAllAsHolderEnds: UnlockAll releasing the lock after the
// holder was done with it, before its own release, leaves the holder no
// error: the lock was held while fn ran, and it is released (Run and
// Resign used to report ErrNotHeld).
func TestUnlockAllAsHolderEnds(t *testing.T) {
	ctx := context.Background()
	for _, holder := range []string{"Run", "RunOnce", "Resign", "Run on a Semaphore"} {
		t.Run(holder, func(t *testing.T) {
			store := memory.New()
			r := &releaser{}
			l := mustSingle(t, store, &lock.Options{Hook: r})
			r.locker = l
			arm := func() { r.op = "unlock" } // UnlockAll as the holder's release begins
			var got error
			switch holder {
			case "Run":
				got = lock.Run(ctx, l, "r", time.Minute, func(context.Context, lock.Lock) error { arm(); return nil })
			case "RunOnce":
				got = lock.RunOnce(ctx, l, "r", time.Minute, func(context.Context, lock.Lock) error { arm(); return nil })
			case "Resign":
				e, err := lock.NewElection(l, "r", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				term, err := e.Campaign(ctx)
				if err != nil {
					t.Fatalf("Campaign = %v", err)
				}
				arm()
				got = term.Resign(ctx)
			case "Run on a Semaphore":
				sem, err := lock.NewSemaphore(l, 2)
				if err != nil {
					t.Fatal(err)
				}
				got = lock.Run(ctx, sem, "r", time.Minute, func(context.Context, lock.Lock) error { arm(); return nil })
			}
			if r.err != nil {
				t.Fatalf("UnlockAll = %v", r.err)
			}
			if !r.fired.Load() {
				t.Fatal("the hook did not see the release begin")
			}
			if got != nil {
				t.Errorf("%s = %v; want nil (UnlockAll released the lock once fn was done)", holder, got)
			}
			if held, err := l.IsLocked(ctx, "r"); err != nil || held {
				t.Errorf("IsLocked(r) = %v, %v; want false, nil", held, err)
			}
		})
	}
}

// TestLostKeeperStops: once its lock is lost (here, Shutdown released
// it), a term's keeper stops at once, not at its next extension, which
// for a long TTL is long after, keeping the locker reachable until then.
func TestLostKeeperStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := mustSingle(t, memory.New(), nil)
		e, err := lock.NewElection(l, "role", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		term, err := e.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		<-term.Context().Done()
		synctest.Wait() // every goroutine of the bubble blocked or done; the clock has not moved
		buf := make([]byte, 1<<20)
		if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "(*keeper).run") {
			t.Errorf("the keeper of a lost term still runs after Shutdown:\n%s", stacks)
		}
		if err := term.Resign(ctx); !errors.Is(err, lock.ErrLost) {
			t.Errorf("Resign = %v; want ErrLost", err)
		}
	})
}

// panicker is a Hook that panics at the first attempt.
type panicker struct{}

func (panicker) Observe(_ context.Context, e lock.Event) {
	if e.Kind == lock.EventAttempt {
		panic("hook")
	}
}

// TestHolderRecordEndsWhenLockPanics: a Lock that panics under Run,
// RunOnce or Campaign (a hook's panic) leaves no record of a holder
// starting, which every later UnlockAll would add to.
func TestHolderRecordEndsWhenLockPanics(t *testing.T) {
	ctx := context.Background()
	l := mustSingle(t, memory.New(), &lock.Options{Hook: panicker{}})
	e, err := lock.NewElection(l, "r", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	before := lock.StartingHolders()
	for name, call := range map[string]func(){
		"Run": func() { _ = lock.Run(ctx, l, "r", time.Minute, func(context.Context, lock.Lock) error { return nil }) },
		"RunOnce": func() {
			_ = lock.RunOnce(ctx, l, "r", time.Minute, func(context.Context, lock.Lock) error { return nil })
		},
		"Campaign": func() { _, _ = e.Campaign(ctx) },
	} {
		wantPanic(t, name+": the hook's panic did not reach the caller", call)
		if n := lock.StartingHolders(); n != before {
			t.Errorf("%s panicked: %d holders recorded as starting; want %d", name, n, before)
		}
	}
}

// TestFixedTokenHolderAfterUnlockAll: with fixed tokens (tests), a Run
// waiting for a resource while UnlockAll releases the locker's earlier
// lock of it, under the same token, takes a lock of its own and keeps it:
// the release recorded while it waited was of the other lock.
func TestFixedTokenHolderAfterUnlockAll(t *testing.T) {
	for _, holder := range []string{"Run", "Run on a writer"} {
		t.Run(holder, func(t *testing.T) { fixedTokenHolder(t, holder == "Run on a writer") })
	}
}

func fixedTokenHolder(t *testing.T, writer bool) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		single := mustSingle(t, memory.New(), &lock.Options{Tokens: tokengen.Fixed("test-token")})
		var l lock.Locker = single
		if writer {
			rw := mustRW(t, single)
			l = rw.Writer()
		}
		if _, err := l.TryLock(ctx, "r", time.Minute); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			done <- lock.Run(ctx, l, "r", time.Minute, func(ctx context.Context, _ lock.Lock) error {
				if ctx.Err() != nil {
					t.Errorf("fn's context ended at its start: %v", context.Cause(ctx))
				}
				return nil
			})
		}()
		synctest.Wait() // Run waits for r
		if err := single.UnlockAll(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Errorf("Run = %v; want nil (its lock was taken after UnlockAll released the other)", err)
		}
	})
}

// TestStartingHolderKeepsNoUnrelatedLocker: a holder waiting in Lock
// records only the releases of its own resource: an unrelated locker
// shut down meanwhile can be collected, and its releases are not kept.
func TestStartingHolderKeepsNoUnrelatedLocker(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := memory.New()
	holder := mustSingle(t, store, nil)
	if _, err := holder.TryLock(ctx, "role", time.Minute); err != nil {
		t.Fatal(err)
	}
	e, err := lock.NewElection(holder, "role", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	campaigned := make(chan error, 1)
	go func() { _, err := e.Campaign(ctx); campaigned <- err }()
	for lock.StartingHolders() == 0 { // the Campaign waits in Lock
		runtime.Gosched()
	}
	var w weak.Pointer[lock.SingleLocker]
	func() {
		other := mustSingle(t, memory.New(), nil)
		w = weak.Make(other)
		if _, err := other.TryLock(ctx, "job", time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := other.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}()
	if n := lock.StartingReleases(); n != 0 {
		t.Errorf("a Campaign waiting for role recorded %d releases of another resource; want 0", n)
	}
	for i := 0; w.Value() != nil; i++ {
		if i == 100 {
			t.Fatal("a locker shut down is kept reachable by a Campaign waiting for another resource")
		}
		runtime.GC()
	}
	cancel()
	if err := <-campaigned; !errors.Is(err, context.Canceled) {
		t.Errorf("Campaign = %v; want context.Canceled", err)
	}
}

// unlockPanics is a Locker whose Unlock panics.
type unlockPanics struct{ lock.Locker }

func (unlockPanics) Unlock(context.Context, lock.Lock) error { panic("unlock") }

// TestKeeperRecordEndsWhenUnlockPanics: a Run whose release panics leaves
// no keeper recorded (the record would keep the locker reachable, and
// every UnlockAll would look at it).
func TestKeeperRecordEndsWhenUnlockPanics(t *testing.T) {
	ctx := context.Background()
	l := mustSingle(t, memory.New(), nil)
	before := lock.KeepersRecorded()
	wantPanic(t, "Unlock's panic did not reach Run's caller", func() {
		_ = lock.Run(ctx, unlockPanics{l}, "r", time.Minute, func(context.Context, lock.Lock) error { return nil })
	})
	if n := lock.KeepersRecorded(); n != before {
		t.Errorf("after a Run whose Unlock panicked: %d keepers recorded; want %d", n, before)
	}
}

// renaming is a Locker of another package that takes its locks under
// names of its own.
type renaming struct {
	lock.Locker
	prefix string
}

func (r renaming) Lock(ctx context.Context, resource string, ttl time.Duration, opts ...lock.LockOption) (lock.Lock, error) {
	return r.Locker.Lock(ctx, r.prefix+resource, ttl, opts...)
}

func (r renaming) TryLock(ctx context.Context, resource string, ttl time.Duration) (lock.Lock, error) {
	return r.Locker.TryLock(ctx, r.prefix+resource, ttl)
}

// lostPanics is a Hook that releases every lock of its locker at the
// first acquisition and panics when told of the loss that causes.
type lostPanics struct{ releaser }

func (h *lostPanics) Observe(ctx context.Context, e lock.Event) {
	if e.Kind == lock.EventLost {
		panic("lost")
	}
	h.releaser.Observe(ctx, e)
}

// TestKeeperNotRecordedWhenBornLost: a holder whose lock UnlockAll
// released as Lock took it is lost at once and not recorded, so that a
// hook panicking at that loss leaves no record (and the locker is not
// kept reachable by it).
func TestKeeperNotRecordedWhenBornLost(t *testing.T) {
	ctx := context.Background()
	h := &lostPanics{releaser{at: lock.EventAcquired}}
	l := mustSingle(t, memory.New(), &lock.Options{Hook: h})
	h.locker = l
	before := lock.KeepersRecorded()
	wantPanic(t, "the hook's panic did not reach Run's caller", func() { _ = lock.Run(ctx, l, "r", time.Minute, func(context.Context, lock.Lock) error { return nil }) })
	if n := lock.KeepersRecorded(); n != before {
		t.Errorf("after a Run whose hook panicked at the loss: %d keepers recorded; want %d", n, before)
	}
}

// extendPanics is a Locker whose Extend panics.
type extendPanics struct{ lock.Locker }

func (extendPanics) Extend(context.Context, lock.Lock, time.Duration) (lock.Lock, error) {
	panic("extend")
}

// TestKeeperRecordEndsWhenKeepingPanics: RunOnce keeping its lock for its
// MinInterval, with an Extend that panics, leaves no keeper recorded.
func TestKeeperRecordEndsWhenKeepingPanics(t *testing.T) {
	ctx := context.Background()
	l := mustSingle(t, memory.New(), nil)
	before := lock.KeepersRecorded()
	wantPanic(t, "Extend's panic did not reach RunOnce's caller", func() {
		_ = lock.RunOnce(ctx, extendPanics{l}, "job", time.Minute, func(context.Context, lock.Lock) error { return nil }, lock.MinInterval(time.Hour))
	})
	if n := lock.KeepersRecorded(); n != before {
		t.Errorf("after a RunOnce whose Extend panicked: %d keepers recorded; want %d", n, before)
	}
}

// wantPanic calls f and reports an error saying what if it does not
// panic.
func wantPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Error(what)
		}
	}()
	f()
}
