package lock_test

// Black-box specification tests of Run, RunOnce, MinInterval, MaxHold,
// FromContext, Election and Term.

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

var errBBJob = errors.New("spec: job failed")

// bbHasOp reports whether err's tree holds a *lock.Error of operation op.
func bbHasOp(err error, op string) bool {
	if err == nil {
		return false
	}
	if le, ok := err.(*lock.Error); ok && le.Op == op {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if bbHasOp(e, op) {
				return true
			}
		}
	case interface{ Unwrap() error }:
		return bbHasOp(u.Unwrap(), op)
	}
	return false
}

// ---- Run ----

func TestSpecRnRunBasics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a := mustSingle(t, st, nil)
		var fnCtx context.Context
		err := lock.Run(ctx, a, "r", bbTTL, func(ctx context.Context, l lock.Lock) error {
			fnCtx = ctx
			if l.Resource != "r" || !l.Valid() {
				t.Errorf("fn got lock %+v; want a valid lock on r", l)
			}
			if fl, ok := lock.FromContext(ctx); !ok || fl.Token != l.Token {
				t.Errorf("FromContext in fn = %+v, %v; want the lock", fl, ok)
			}
			if held, _ := st.Exists(ctx, "r"); !held {
				t.Errorf("resource not held while fn runs")
			}
			return errBBJob
		})
		if !errors.Is(err, errBBJob) {
			t.Errorf("Run = %v; want fn's error", err)
		}
		if errors.Is(err, lock.ErrLost) || errors.Is(err, lock.ErrMaxHold) {
			t.Errorf("Run = %v; matches ErrLost/ErrMaxHold without a loss", err)
		}
		if held, _ := st.Exists(ctx, "r"); held {
			t.Errorf("Run did not release the lock")
		}
		if fnCtx.Err() == nil {
			t.Errorf("fn's context not canceled after fn returned")
		}
	})
}

func TestSpecRnRunPanicReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Errorf("recovered %v; want the panic to continue", r)
				}
			}()
			lock.Run(context.Background(), a, "r", bbTTL, func(ctx context.Context, l lock.Lock) error {
				panic("boom")
			})
		}()
		if held, _ := st.Exists(context.Background(), "r"); held {
			t.Errorf("Run did not release the lock when fn panicked")
		}
	})
}

func TestSpecRnRunLockFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		mustSingle(t, st, nil).TryLock(context.Background(), "r", time.Hour)
		a := mustSingle(t, st, nil)
		called := false
		err := lock.Run(context.Background(), a, "r", bbTTL, func(ctx context.Context, l lock.Lock) error {
			called = true
			return nil
		}, lock.WithRetry(lock.NoRetry))
		if !errors.Is(err, lock.ErrNotAcquired) || called {
			t.Errorf("Run on held resource with NoRetry = %v (fn called %v); want ErrNotAcquired, fn not called", err, called)
		}
	})
}

func TestSpecRnRunExtends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		const ttl = 3 * time.Second
		err := lock.Run(context.Background(), a, "r", ttl, func(ctx context.Context, l lock.Lock) error {
			time.Sleep(5 * ttl)
			if ctx.Err() != nil {
				t.Errorf("fn's context ended (%v) although Run extends the lock", context.Cause(ctx))
			}
			if _, err := b.TryLock(context.Background(), "r", ttl); !errors.Is(err, lock.ErrNotAcquired) {
				t.Errorf("TryLock by another after 5×ttl of Run = %v; want ErrNotAcquired", err)
			}
			fl, _ := lock.FromContext(ctx)
			if !fl.ValidUntil.After(l.ValidUntil) || !fl.Valid() {
				t.Errorf("FromContext ValidUntil = %v; want after the acquired %v, and valid", fl.ValidUntil, l.ValidUntil)
			}
			return nil
		})
		if err != nil {
			t.Errorf("Run = %v; want nil", err)
		}
	})
}

func TestSpecRnRunLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		var fnCtx context.Context
		err := lock.Run(context.Background(), a, "r", 3*time.Second, func(ctx context.Context, l lock.Lock) error {
			fnCtx = ctx
			st.Expire("r")
			<-ctx.Done()
			if c := context.Cause(ctx); !errors.Is(c, lock.ErrLost) {
				t.Errorf("cause after Expire = %v; want ErrLost", c)
			}
			if fl, ok := lock.FromContext(ctx); !ok || fl.Valid() {
				t.Errorf("FromContext after loss: Valid() = %v; want false", fl.Valid())
			}
			return nil
		})
		if !errors.Is(err, lock.ErrLost) {
			t.Errorf("Run after the lock was lost (fn returned nil) = %v; want ErrLost", err)
		}
		if bbHasOp(err, "unlock") {
			t.Errorf("Run = %v; the release finding a lost lock not held is no further error", err)
		}
		_ = fnCtx
	})
}

func TestSpecRnRunLostAtValidityWhenExtensionsFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		st.Inject(memory.Fault{Ops: memory.OpExtend, Err: errBBDown, Times: memory.Always})
		err := lock.Run(context.Background(), a, "r", 3*time.Second, func(ctx context.Context, l lock.Lock) error {
			time.Sleep(time.Until(l.ValidUntil) - time.Millisecond)
			if ctx.Err() != nil {
				t.Errorf("fn's context ended before ValidUntil")
			}
			time.Sleep(time.Until(l.ValidUntil))
			if ctx.Err() == nil || !errors.Is(context.Cause(ctx), lock.ErrLost) {
				t.Errorf("at ValidUntil with failing extensions: Err = %v, cause %v; want canceled with ErrLost", ctx.Err(), context.Cause(ctx))
			}
			return nil
		})
		if !errors.Is(err, lock.ErrLost) {
			t.Errorf("Run = %v; want ErrLost", err)
		}
	})
}

func TestSpecRnRunNoExtenderEndsAtValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mustSingle(t, bbPlainStore{memory.New()}, nil)
		err := lock.Run(context.Background(), a, "r", 3*time.Second, func(ctx context.Context, l lock.Lock) error {
			time.Sleep(time.Until(l.ValidUntil))
			if ctx.Err() == nil || !errors.Is(context.Cause(ctx), lock.ErrLost) {
				t.Errorf("at ValidUntil without Extender: Err = %v, cause %v; want ErrLost", ctx.Err(), context.Cause(ctx))
			}
			return nil
		})
		if !errors.Is(err, lock.ErrLost) {
			t.Errorf("Run without Extender, fn outliving validity = %v; want ErrLost", err)
		}
	})
}

func TestSpecRnRunMaxHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		start := time.Now()
		err := lock.Run(context.Background(), a, "r", 3*time.Second, func(ctx context.Context, l lock.Lock) error {
			<-ctx.Done()
			if c := context.Cause(ctx); !errors.Is(c, lock.ErrMaxHold) {
				t.Errorf("cause = %v; want ErrMaxHold", c)
			}
			if d := time.Since(start); d != 10*time.Second {
				t.Errorf("MaxHold(10s) ended fn's context after %v; want 10s", d)
			}
			return nil
		}, lock.MaxHold(10*time.Second))
		if !errors.Is(err, lock.ErrMaxHold) || errors.Is(err, lock.ErrLost) {
			t.Errorf("Run with MaxHold reached = %v; want ErrMaxHold", err)
		}
	})
}

func TestSpecRnRunParentCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		ctx, cancel := context.WithCancel(context.Background())
		err := lock.Run(ctx, a, "r", bbTTL, func(fctx context.Context, l lock.Lock) error {
			cancel()
			<-fctx.Done()
			return fctx.Err()
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run with ctx canceled = %v; want context.Canceled (fn's)", err)
		}
		if held, _ := st.Exists(context.Background(), "r"); held {
			t.Errorf("lock not released after ctx canceled")
		}
	})
}

func TestSpecRnRunExtendEveryValidation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mustSingle(t, memory.New(), nil)
		fn := func(ctx context.Context, l lock.Lock) error { return nil }
		for _, d := range []time.Duration{bbTTL, bbTTL - bbTTL/100 - 2*time.Millisecond, time.Millisecond / 2} {
			err := lock.Run(context.Background(), a, "r", bbTTL, fn, lock.ExtendEvery(d))
			bbWantInvalid(t, "Run(ExtendEvery("+d.String()+"))", err, "extend", "interval")
		}
		if err := lock.Run(context.Background(), a, "r", bbTTL, fn, lock.ExtendEvery(time.Second)); err != nil {
			t.Errorf("Run(ExtendEvery(1s)) = %v; want accepted", err)
		}
	})
}

func TestSpecRnFromContextOther(t *testing.T) {
	if _, ok := lock.FromContext(context.Background()); ok {
		t.Errorf("FromContext(Background) ok = true; want false")
	}
	var nilCtx context.Context
	if _, ok := lock.FromContext(nilCtx); ok {
		t.Errorf("FromContext(nil) ok = true; want false")
	}
}

// bbKey is a context key of the tests'.
type bbKey struct{}

func TestSpecRnFromContextAfterReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mustSingle(t, memory.New(), nil)
		var saved context.Context
		lock.Run(context.Background(), a, "r", bbTTL, func(ctx context.Context, l lock.Lock) error {
			saved = context.WithValue(ctx, bbKey{}, 1) // a derived context
			return nil
		})
		fl, ok := lock.FromContext(saved)
		if !ok || fl.Valid() {
			t.Errorf("FromContext of a derived ctx after fn returned = %+v, %v; want ok and not Valid", fl, ok)
		}
	})
}

// UnlockAll and Shutdown of the locker end a Run's lock: fn's context
// ends with ErrLost and the lock is released.
func TestSpecRnUnlockAllAndShutdownEndRun(t *testing.T) {
	for _, end := range []struct {
		name string
		call func(*lock.SingleLocker) error
	}{
		{"UnlockAll", func(l *lock.SingleLocker) error { return l.UnlockAll(context.Background()) }},
		{"Shutdown", func(l *lock.SingleLocker) error { return l.Shutdown(context.Background()) }},
	} {
		t.Run(end.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := memory.New()
				a := mustSingle(t, st, nil)
				started := make(chan struct{})
				done := make(chan error, 1)
				go func() {
					done <- lock.Run(context.Background(), a, "r", bbTTL, func(ctx context.Context, l lock.Lock) error {
						close(started)
						<-ctx.Done()
						if !errors.Is(context.Cause(ctx), lock.ErrLost) {
							t.Errorf("cause after %s = %v; want ErrLost", end.name, context.Cause(ctx))
						}
						return nil
					})
				}()
				<-started
				if err := end.call(a); err != nil {
					t.Errorf("%s = %v", end.name, err)
				}
				<-done
				if held, _ := st.Exists(context.Background(), "r"); held {
					t.Errorf("%s left Run's lock held", end.name)
				}
			})
		})
	}
}

// ---- RunOnce ----

func TestSpecRnRunOnceSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		mustSingle(t, st, nil).TryLock(context.Background(), "job", time.Hour)
		a := mustSingle(t, st, nil)
		start := time.Now()
		called := false
		err := lock.RunOnce(context.Background(), a, "job", bbTTL, func(ctx context.Context, l lock.Lock) error {
			called = true
			return nil
		}, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: time.Millisecond}))
		if !errors.Is(err, lock.ErrSkipped) || !errors.Is(err, lock.ErrNotAcquired) || called {
			t.Errorf("RunOnce on held job = %v (called %v); want ErrSkipped and ErrNotAcquired, fn not called", err, called)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("RunOnce on held job took %v; want at once (WithRetry ignored)", d)
		}
	})
}

func TestSpecRnRunOnceStoreFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		st.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errBBDown})
		err := lock.RunOnce(context.Background(), a, "job", bbTTL, func(ctx context.Context, l lock.Lock) error { return nil })
		if !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrSkipped) {
			t.Errorf("RunOnce with failing store = %v; want ErrUnavailable, never ErrSkipped", err)
		}
	})
}

func TestSpecRnRunOnceRunsAndReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		err := lock.RunOnce(context.Background(), a, "job", bbTTL, func(ctx context.Context, l lock.Lock) error {
			if _, ok := lock.FromContext(ctx); !ok {
				t.Errorf("FromContext in RunOnce's fn: not ok")
			}
			return errBBJob
		})
		if !errors.Is(err, errBBJob) {
			t.Errorf("RunOnce = %v; want fn's error", err)
		}
		if held, _ := st.Exists(context.Background(), "job"); held {
			t.Errorf("RunOnce without MinInterval left the lock held")
		}
	})
}

func TestSpecRnMinInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		const interval = time.Minute
		runs := 0
		job := func(ctx context.Context, l lock.Lock) error { runs++; time.Sleep(time.Second); return nil }
		if err := lock.RunOnce(context.Background(), a, "job", bbTTL, job, lock.MinInterval(interval)); err != nil {
			t.Fatalf("RunOnce = %v", err)
		}
		time.Sleep(interval - 2*time.Second) // 1s before the interval's end
		if err := lock.RunOnce(context.Background(), b, "job", bbTTL, job); !errors.Is(err, lock.ErrSkipped) {
			t.Errorf("RunOnce within MinInterval of the first run = %v; want ErrSkipped", err)
		}
		time.Sleep(time.Second + time.Millisecond) // past the interval's end
		if held, _ := st.Exists(context.Background(), "job"); held {
			t.Errorf("MinInterval lock still held after the interval")
		}
		if err := lock.RunOnce(context.Background(), b, "job", bbTTL, job); err != nil || runs != 2 {
			t.Errorf("RunOnce after MinInterval = %v, runs %d; want nil, 2", err, runs)
		}
	})
}

func TestSpecRnMinIntervalWithMaxHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		err := lock.RunOnce(context.Background(), a, "job", 3*time.Second, func(ctx context.Context, l lock.Lock) error {
			return nil
		}, lock.MinInterval(time.Minute), lock.MaxHold(time.Second))
		if err != nil {
			t.Fatalf("RunOnce = %v", err)
		}
		time.Sleep(30 * time.Second)
		if held, _ := st.Exists(context.Background(), "job"); !held {
			t.Errorf("MaxHold shortened MinInterval: lock free 30s into a 1m interval")
		}
	})
}

func TestSpecRnMinIntervalUnlockAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		lock.RunOnce(context.Background(), a, "job", bbTTL, func(ctx context.Context, l lock.Lock) error { return nil }, lock.MinInterval(time.Hour))
		if held, _ := st.Exists(context.Background(), "job"); !held {
			t.Fatalf("MinInterval lock not held after fn returned")
		}
		a.UnlockAll(context.Background())
		if held, _ := st.Exists(context.Background(), "job"); held {
			t.Errorf("UnlockAll did not release the MinInterval lock early")
		}
	})
}

// ---- Election ----

func TestSpecRnNewElectionValidation(t *testing.T) {
	a := mustSingle(t, memory.New(), nil)
	_, err := lock.NewElection(nil, "role", bbTTL)
	bbWantInvalid(t, "NewElection(nil locker)", err, "locker", "nil")
	_, err = lock.NewElection(a, "", bbTTL)
	bbWantInvalid(t, "NewElection(empty role)", err, "role", "resource", "empty")
	for _, ttl := range []time.Duration{0, -time.Second, lock.MaxTTL + time.Second} {
		_, err = lock.NewElection(a, "role", ttl)
		bbWantInvalid(t, "NewElection(ttl "+ttl.String()+")", err, "ttl")
	}
	_, err = lock.NewElection(a, "role", bbTTL, lock.WithRetry(lock.Retry{Attempts: 3, Delay: 10 * time.Millisecond, MaxDelay: time.Millisecond}))
	bbWantInvalid(t, "NewElection(bad retry)", err, "delay")
	_, err = lock.NewElection(a, "role", bbTTL, lock.ExtendEvery(bbTTL))
	bbWantInvalid(t, "NewElection(ExtendEvery(ttl))", err, "extend", "interval")
	e, err := lock.NewElection(a, "role", bbTTL)
	if err != nil || e.Role() != "role" {
		t.Errorf("NewElection = %v, %v; want ok with Role() role", e, err)
	}
}

func TestSpecRnElectionCampaignResign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a := mustSingle(t, st, &lock.Options{Holder: "node-a"})
		b := mustSingle(t, st, &lock.Options{Holder: "node-b"})
		ea, _ := lock.NewElection(a, "leader", bbTTL)
		eb, _ := lock.NewElection(b, "leader", bbTTL, lock.WithRetry(lock.NoRetry))
		if ld, err := eb.Leader(ctx); err != nil || ld.Elected {
			t.Errorf("Leader before any campaign = %+v, %v; want not elected", ld, err)
		}
		term, err := ea.Campaign(ctx)
		if err != nil {
			t.Fatalf("Campaign = %v", err)
		}
		if ld, err := eb.Leader(ctx); err != nil || !ld.Elected || ld.Holder != "node-a" {
			t.Errorf("Leader = %+v, %v; want Elected, Holder node-a", ld, err)
		}
		if _, err := eb.Campaign(ctx); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("Campaign (NoRetry) while another leads = %v; want ErrNotAcquired", err)
		}
		if !term.ValidUntil().Before(term.Lock().ValidUntil) {
			t.Errorf("Term.ValidUntil %v not before the lock's %v", term.ValidUntil(), term.Lock().ValidUntil)
		}
		time.Sleep(5 * bbTTL) // renewed in the background
		if term.Context().Err() != nil {
			t.Errorf("term ended after 5×ttl: %v", context.Cause(term.Context()))
		}
		if err := term.Resign(ctx); err != nil {
			t.Errorf("Resign = %v; want nil", err)
		}
		if c := context.Cause(term.Context()); !errors.Is(c, lock.ErrResigned) {
			t.Errorf("term cause after Resign = %v; want ErrResigned", c)
		}
		if term.Lock().Valid() || term.ValidUntil().After(time.Now()) {
			t.Errorf("after Resign: Lock().Valid()=%v ValidUntil=%v; want invalid, in the past", term.Lock().Valid(), term.ValidUntil())
		}
		tb, err := eb.Campaign(ctx)
		if err != nil {
			t.Fatalf("Campaign right after Resign = %v; want elected at once", err)
		}
		if tb.Fence() <= term.Fence() {
			t.Errorf("second term Fence %d; want > first %d", tb.Fence(), term.Fence())
		}
		var nilCtx context.Context // nil: the bad input under test
		if err := term.Resign(nilCtx); err != nil {
			t.Errorf("second Resign (nil ctx) of a resigned term = %v; want same as first (nil)", err)
		}
		tb.Resign(ctx)
	})
}

func TestSpecRnTermLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a := mustSingle(t, st, nil)
		e, _ := lock.NewElection(a, "leader", 3*time.Second)
		term, err := e.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st.Expire("leader")
		<-term.Context().Done()
		if c := context.Cause(term.Context()); !errors.Is(c, lock.ErrLost) {
			t.Errorf("term cause after takeover = %v; want ErrLost", c)
		}
		if err := term.Resign(ctx); !errors.Is(err, lock.ErrLost) {
			t.Errorf("Resign of lost term = %v; want ErrLost", err)
		}
		if err := term.Resign(ctx); !errors.Is(err, lock.ErrLost) {
			t.Errorf("second Resign of lost term = %v; want the same (ErrLost)", err)
		}
	})
}

func TestSpecRnTermEndsBeforeLockOnStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a := mustSingle(t, st, nil)
		e, _ := lock.NewElection(a, "leader", 3*time.Second)
		term, err := e.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lockEnd := term.Lock().ValidUntil
		st.Inject(memory.Fault{Ops: memory.OpExtend, Err: errBBDown, Times: memory.Always})
		time.Sleep(time.Until(term.ValidUntil()))
		if term.Context().Err() == nil || !errors.Is(context.Cause(term.Context()), lock.ErrLost) {
			t.Errorf("at Term.ValidUntil with stalled renewals: Err %v cause %v; want ended with ErrLost", term.Context().Err(), context.Cause(term.Context()))
		}
		if !time.Now().Before(lockEnd) {
			t.Errorf("term ended at %v, not before the lock's validity %v", time.Now(), lockEnd)
		}
		st.ClearFaults()
		term.Resign(ctx)
	})
}

func TestSpecRnTermMaxHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a := mustSingle(t, memory.New(), nil)
		e, _ := lock.NewElection(a, "leader", 3*time.Second, lock.MaxHold(10*time.Second))
		term, err := e.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		<-term.Context().Done()
		if c := context.Cause(term.Context()); !errors.Is(c, lock.ErrMaxHold) {
			t.Errorf("term cause = %v; want ErrMaxHold", c)
		}
		if err := term.Resign(ctx); err != nil {
			t.Errorf("Resign after MaxHold = %v; want nil (finding the lock run out is no error)", err)
		}
	})
}

func TestSpecRnTermResignNilContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		e, _ := lock.NewElection(a, "leader", bbTTL)
		term, _ := e.Campaign(context.Background())
		var nilCtx context.Context
		bbWantInvalid(t, "Resign(nil) of a live term", term.Resign(nilCtx), "context", "nil", "ctx")
		if term.Context().Err() != nil {
			t.Errorf("Resign(nil) ended the term; want nothing changed")
		}
		term.Resign(context.Background())
	})
}

func TestSpecRnElectionLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		ea, _ := lock.NewElection(a, "leader", bbTTL)
		eb, _ := lock.NewElection(b, "leader", bbTTL, lock.WithRetry(lock.NoRetry))
		err := ea.Lead(ctx, func(ctx context.Context, term *lock.Term) error {
			if fl, ok := lock.FromContext(ctx); !ok || fl.Token != term.Lock().Token {
				t.Errorf("FromContext of term's ctx = %+v, %v; want the term's lock", fl, ok)
			}
			if err := eb.Lead(context.Background(), func(context.Context, *lock.Term) error {
				t.Errorf("second leader elected while the first leads")
				return nil
			}); !errors.Is(err, lock.ErrNotAcquired) {
				t.Errorf("Lead while another leads = %v; want Campaign's ErrNotAcquired", err)
			}
			return errBBJob
		})
		if !errors.Is(err, errBBJob) {
			t.Errorf("Lead = %v; want fn's error", err)
		}
		if held, _ := st.Exists(ctx, "leader"); held {
			t.Errorf("Lead did not resign: role still held")
		}
	})
}

func TestSpecRnCampaignClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mustSingle(t, memory.New(), nil)
		e, _ := lock.NewElection(a, "leader", bbTTL)
		a.Shutdown(context.Background())
		if _, err := e.Campaign(context.Background()); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Campaign after Shutdown = %v; want ErrClosed", err)
		}
	})
}

func TestSpecRnMinIntervalWithLockDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, &lock.Options{LockDelay: 5 * time.Second})
		const interval = time.Minute
		if err := lock.RunOnce(context.Background(), a, "job", bbTTL, func(ctx context.Context, l lock.Lock) error { return nil }, lock.MinInterval(interval)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(interval - time.Millisecond)
		if held, _ := st.Exists(context.Background(), "job"); !held {
			t.Errorf("MinInterval+LockDelay lock free before the interval's end")
		}
		time.Sleep(2 * time.Millisecond)
		if held, _ := st.Exists(context.Background(), "job"); held {
			t.Errorf("MinInterval+LockDelay lock still held after the interval's end; want free then (extended for interval less delay)")
		}
	})
}

func TestSpecRnMinIntervalExtendFailsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		st.Inject(memory.Fault{Ops: memory.OpExtend, Err: errBBDown, Times: memory.Always})
		err := lock.RunOnce(context.Background(), a, "job", bbTTL, func(ctx context.Context, l lock.Lock) error { return nil }, lock.MinInterval(time.Hour))
		if err == nil {
			t.Errorf("RunOnce whose MinInterval extension fails = nil; want the failure reported")
		}
		st.ClearFaults()
	})
}

func TestSpecRnMinIntervalNoExtender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		a := mustSingle(t, bbPlainStore{m}, nil)
		err := lock.RunOnce(context.Background(), a, "job", bbTTL, func(ctx context.Context, l lock.Lock) error { return nil }, lock.MinInterval(time.Hour))
		if err != nil {
			t.Errorf("RunOnce MinInterval on store without Extender = %v; want nil (left to expire at TTL, not reported)", err)
		}
		if held, _ := m.Exists(context.Background(), "job"); !held {
			t.Errorf("lock released although MinInterval not over (want left to expire at its TTL)")
		}
	})
}

func TestSpecRnLeaderWithoutHolderReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a := mustSingle(t, bbExtStore{bbPlainStore{memory.New()}}, &lock.Options{Holder: "x"})
		e, _ := lock.NewElection(a, "leader", bbTTL)
		term, err := e.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ld, err := e.Leader(ctx)
		if err != nil || !ld.Elected || ld.Holder != "" {
			t.Errorf("Leader over a store that cannot tell the holder = %+v, %v; want Elected, Holder \"\", nil (falls back to IsLocked)", ld, err)
		}
		term.Resign(ctx)
	})
}

func TestSpecRnLostEventOps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		rec := &bbRecorder{}
		a := mustSingle(t, st, &lock.Options{Hook: rec})
		lock.RunOnce(ctx, a, "job", 3*time.Second, func(ctx context.Context, l lock.Lock) error {
			st.Expire("job")
			<-ctx.Done()
			return nil
		})
		e, _ := lock.NewElection(a, "role", 3*time.Second)
		term, _ := e.Campaign(ctx)
		st.Expire("role")
		<-term.Context().Done()
		term.Resign(ctx)
		var ops []string
		for _, ev := range rec.ofKind(lock.EventLost) {
			ops = append(ops, ev.Op)
		}
		if len(ops) != 2 || ops[0] != "runonce" || ops[1] != "campaign" {
			t.Errorf("EventLost ops = %v; want [runonce campaign]", ops)
		}
	})
}

// bbWrapped is a Locker of another package: Run cannot know its validity.
type bbWrapped struct{ lock.Locker }

func TestSpecRnRunForeignLockerExtendEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		w := bbWrapped{mustSingle(t, st, nil)}
		const ttl = 3 * time.Second
		fn := func(ctx context.Context, l lock.Lock) error { return nil }
		err := lock.Run(context.Background(), w, "r", ttl, fn, lock.ExtendEvery(ttl))
		bbWantInvalid(t, "Run(foreign locker, ExtendEvery(ttl))", err, "extend", "interval")
		if err := lock.Run(context.Background(), w, "r", ttl, fn, lock.ExtendEvery(time.Second)); err != nil {
			t.Errorf("Run(foreign locker, ExtendEvery(1s)) = %v; want nil", err)
		}
	})
}

// Run: "(With a Locker of another package ... the interval must be shorter
// than ttl, and each extension comes early enough for the validity the
// acquisition or the extension before it left ...)" — an accepted interval
// between the validity and the ttl keeps the lock, as Run promises to.
func TestSpecRnRunForeignLockerIntervalPastValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		w := bbWrapped{mustSingle(t, st, nil)}
		const ttl = 3 * time.Second
		err := lock.Run(context.Background(), w, "r", ttl, func(ctx context.Context, l lock.Lock) error {
			time.Sleep(4 * ttl)
			if ctx.Err() != nil {
				t.Errorf("fn's context ended (%v) with a foreign locker and ExtendEvery(ttl-1ms)", context.Cause(ctx))
			}
			return nil
		}, lock.ExtendEvery(ttl-time.Millisecond))
		if err != nil {
			t.Errorf("Run(foreign locker, ExtendEvery(ttl-1ms)) = %v; want nil", err)
		}
	})
}

func TestSpecRnTermValidUntilTenth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mustSingle(t, memory.New(), nil)
		e, _ := lock.NewElection(a, "leader", bbTTL)
		start := time.Now()
		term, err := e.Campaign(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		v := term.Lock().ValidUntil.Sub(start)
		if got, want := term.ValidUntil().Sub(start), v-v/10; got != want {
			t.Errorf("Term.ValidUntil - start = %v; want the lock's validity %v less a tenth: %v", got, v, want)
		}
		term.Resign(context.Background())
	})
}

func TestSpecRnCampaignWaitsUntilContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		mustSingle(t, st, nil).TryLock(context.Background(), "leader", time.Hour)
		e, _ := lock.NewElection(mustSingle(t, st, nil), "leader", bbTTL)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		_, err := e.Campaign(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("Campaign while another leads = %v; want DeadlineExceeded", err)
		}
		if d := time.Since(start); d != time.Minute {
			t.Errorf("Campaign gave up after %v; want at ctx's end (1m)", d)
		}
	})
}

func TestSpecRnLeadCtxEndsTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		e, _ := lock.NewElection(mustSingle(t, st, nil), "leader", bbTTL)
		ctx, cancel := context.WithCancel(context.Background())
		err := e.Lead(ctx, func(tctx context.Context, term *lock.Term) error {
			cancel()
			<-tctx.Done()
			return nil
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Lead after ctx cancel = %v", err)
		}
		if held, _ := st.Exists(context.Background(), "leader"); held {
			t.Errorf("Lead did not resign after ctx ended")
		}
	})
}
