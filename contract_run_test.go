package lock_test

// Black-box review of Run, RunOnce and elections against their docs.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

func TestContractRunLossByExpiry(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		err := lock.Run(ctx, l, "r", 3*time.Second, func(ctx context.Context, k lock.Lock) error {
			time.Sleep(500 * time.Millisecond)
			for _, m := range ms {
				m.Expire("r")
			}
			<-ctx.Done()
			cause := context.Cause(ctx)
			if !errors.Is(cause, lock.ErrLost) {
				t.Errorf("fn's context cause = %v; want ErrLost", cause)
			}
			if !errors.Is(cause, lock.ErrNotHeld) {
				t.Errorf("fn's context cause = %v; want it to carry ErrNotHeld (an extension found it not held)", cause)
			}
			return ctx.Err()
		})
		wantIs(t, "Run with the lock lost", err, lock.ErrLost)
		noResidue(t, ms...)
	})
}

func TestContractRunKeepsLockAndFromContext(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		if _, ok := lock.FromContext(ctx); ok {
			t.Errorf("FromContext(Background) reported a lock")
		}
		errFn := errors.New("fn failed")
		err := lock.Run(ctx, l, "r", 3*time.Second, func(ctx context.Context, k lock.Lock) error {
			first, ok := lock.FromContext(ctx)
			if !ok || first.Token != k.Token || !first.ValidUntil.Equal(k.ValidUntil) {
				t.Errorf("FromContext at start = %+v, %v; want the lock %+v", first, ok, k)
			}
			for range 10 {
				time.Sleep(time.Second)
				if err := ctx.Err(); err != nil {
					t.Fatalf("fn's context ended while the lock is extended: %v", context.Cause(ctx))
				}
			}
			cur, _ := lock.FromContext(ctx)
			if !cur.Valid() || !cur.ValidUntil.After(k.ValidUntil) {
				t.Errorf("FromContext after 10s: ValidUntil %v, valid %v; want later than %v", cur.ValidUntil, cur.Valid(), k.ValidUntil)
			}
			if ok, _ := l.IsLocked(ctx, "r"); !ok {
				t.Errorf("lock not held after 10s of Run with a 3s TTL")
			}
			return errFn
		})
		if !errors.Is(err, errFn) {
			t.Errorf("Run = %v; want fn's error", err)
		}
		if errors.Is(err, lock.ErrLost) {
			t.Errorf("Run = %v; lock was not lost", err)
		}
		noResidue(t, ms...)
	})
}

func TestContractRunNoExtenderEndsAtValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		l := mustSingle(t, basic{m}, nil)
		err := lock.Run(ctx, l, "r", 3*time.Second, func(ctx context.Context, k lock.Lock) error {
			time.Sleep(time.Until(k.ValidUntil) - time.Nanosecond)
			if err := ctx.Err(); err != nil {
				t.Errorf("ctx.Err() just before ValidUntil = %v; want nil", err)
			}
			time.Sleep(time.Nanosecond)
			if err := ctx.Err(); err == nil {
				t.Errorf("ctx.Err() at ValidUntil = nil; want the loss (doc: from Lock.ValidUntil on)")
			}
			<-ctx.Done()
			if c := context.Cause(ctx); !errors.Is(c, lock.ErrLost) {
				t.Errorf("cause = %v; want ErrLost", c)
			}
			return nil
		})
		wantIs(t, "Run on a store without Extender", err, lock.ErrLost)
		noResidue(t, m)
	})
}

func TestContractRunMaxHold(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		start := time.Now()
		err := lock.Run(ctx, l, "r", 3*time.Second, func(ctx context.Context, k lock.Lock) error {
			<-ctx.Done()
			if d := time.Since(start); d != 5*time.Second {
				t.Errorf("MaxHold(5s) ended fn's context after %v", d)
			}
			if c := context.Cause(ctx); !errors.Is(c, lock.ErrMaxHold) {
				t.Errorf("cause = %v; want ErrMaxHold", c)
			}
			return nil
		}, lock.MaxHold(5*time.Second))
		wantIs(t, "Run with MaxHold", err, lock.ErrMaxHold)
		noResidue(t, ms...)
	})
}

func TestContractRunPanicReleases(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recover() = %v; want the panic to continue", p)
			}
			noResidue(t, ms...)
		}()
		_ = lock.Run(context.Background(), l, "r", time.Second, func(context.Context, lock.Lock) error { panic("boom") })
	})
}

func TestContractRunContendedAndCanceled(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		k, err := l.TryLock(ctx, "r", time.Minute)
		wantNil(t, "TryLock", err)
		ran := false
		err = lock.Run(ctx, l, "r", time.Second, func(context.Context, lock.Lock) error { ran = true; return nil }, lock.WithRetry(lock.NoRetry))
		wantIs(t, "Run(held, NoRetry)", err, lock.ErrNotAcquired)
		if ran {
			t.Errorf("fn ran without the lock")
		}
		wantNil(t, "Unlock", l.Unlock(ctx, k))

		cctx, cancel := context.WithCancel(ctx)
		err = lock.Run(cctx, l, "r", time.Second, func(ctx context.Context, _ lock.Lock) error {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		})
		wantIs(t, "Run canceled", err, context.Canceled)
		if errors.Is(err, lock.ErrLost) {
			t.Errorf("Run canceled = %v; want no ErrLost", err)
		}
		noResidue(t, ms...)
	})
}

func TestContractRunOnce(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		runs := 0
		job := func(context.Context, lock.Lock) error { runs++; return nil }
		k, err := l.TryLock(ctx, "job", time.Minute)
		wantNil(t, "TryLock", err)
		err = lock.RunOnce(ctx, l, "job", time.Second, job)
		wantIs(t, "RunOnce(held)", err, lock.ErrSkipped)
		wantIs(t, "RunOnce(held)", err, lock.ErrNotAcquired)
		if runs != 0 {
			t.Errorf("job ran while held")
		}
		wantNil(t, "Unlock", l.Unlock(ctx, k))

		for _, m := range ms {
			m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset, Times: memory.Always})
		}
		err = lock.RunOnce(ctx, l, "job", time.Second, job)
		wantIs(t, "RunOnce with failing stores", err, lock.ErrUnavailable)
		if errors.Is(err, lock.ErrSkipped) {
			t.Errorf("RunOnce with failing stores = %v; must not be a skip", err)
		}
		for _, m := range ms {
			m.ClearFaults()
		}

		// MinInterval: held after the job returns until the interval ends.
		wantNil(t, "RunOnce(MinInterval 10s)", lock.RunOnce(ctx, l, "job", 2*time.Second, job, lock.MinInterval(10*time.Second)))
		if runs != 1 {
			t.Fatalf("job ran %d times; want 1", runs)
		}
		time.Sleep(9 * time.Second)
		err = lock.RunOnce(ctx, l, "job", 2*time.Second, job)
		wantIs(t, "RunOnce within MinInterval", err, lock.ErrSkipped)
		time.Sleep(1100 * time.Millisecond)
		wantNil(t, "RunOnce after MinInterval", lock.RunOnce(ctx, l, "job", 2*time.Second, job))
		if runs != 2 {
			t.Errorf("job ran %d times; want 2", runs)
		}
		noResidue(t, ms...)

		// Shutdown releases a lock kept for MinInterval early.
		wantNil(t, "RunOnce(MinInterval 1h)", lock.RunOnce(ctx, l, "job", 2*time.Second, job, lock.MinInterval(time.Hour)))
		wantNil(t, "UnlockAll", l.UnlockAll(ctx))
		noResidue(t, ms...)
	})
}

func TestContractRunOnceMinIntervalNoExtender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		l := mustSingle(t, basic{m}, nil)
		err := lock.RunOnce(ctx, l, "job", 5*time.Second, func(context.Context, lock.Lock) error { return nil }, lock.MinInterval(time.Minute))
		wantNil(t, "RunOnce(MinInterval) on a store that cannot extend", err)
		// The lock simply expires at its TTL.
		if ok, _ := m.Exists(ctx, "job"); !ok {
			t.Errorf("lock released at once; want it kept to its TTL")
		}
		time.Sleep(5 * time.Second)
		noResidue(t, m)
	})
}

func TestContractElection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		la := mustSingle(t, m, &lock.Options{Holder: "a"})
		lb := mustSingle(t, m, &lock.Options{Holder: "b"})
		ea, err := lock.NewElection(la, "leader", 3*time.Second)
		wantNil(t, "NewElection(a)", err)
		eb, err := lock.NewElection(lb, "leader", 3*time.Second)
		wantNil(t, "NewElection(b)", err)
		ebTry, err := lock.NewElection(lb, "leader", 3*time.Second, lock.WithRetry(lock.NoRetry))
		wantNil(t, "NewElection(b, NoRetry)", err)
		if ea.Role() != "leader" {
			t.Errorf("Role() = %q", ea.Role())
		}
		if ld, err := ea.Leader(ctx); err != nil || ld.Elected {
			t.Errorf("Leader() before any campaign = %+v, %v; want not elected", ld, err)
		}
		ta, err := ea.Campaign(ctx)
		wantNil(t, "Campaign(a)", err)
		if ld, err := eb.Leader(ctx); err != nil || !ld.Elected || ld.Holder != "a" {
			t.Errorf("Leader() = %+v, %v; want a", ld, err)
		}
		lk := ta.Lock()
		validity := time.Until(lk.ValidUntil)
		if want := lk.ValidUntil.Add(-validity / 10); !ta.ValidUntil().Equal(want) {
			t.Errorf("Term.ValidUntil() = lock's - %v; want lock's - a tenth of the validity (%v)", lk.ValidUntil.Sub(ta.ValidUntil()), validity/10)
		}
		if ta.Fence() == 0 || ta.Fence() != lk.Fence {
			t.Errorf("Term.Fence() = %d; want the lock's fence %d (> 0 on memory)", ta.Fence(), lk.Fence)
		}
		_, err = ebTry.Campaign(ctx)
		wantIs(t, "Campaign(b, NoRetry) while a leads", err, lock.ErrNotAcquired)

		// b waits; a leads for a while (renewed), then resigns.
		type res struct {
			t   *lock.Term
			err error
		}
		bc := make(chan res, 1)
		go func() { tb, err := eb.Campaign(ctx); bc <- res{tb, err} }()
		time.Sleep(20 * time.Second)
		if err := ta.Context().Err(); err != nil {
			t.Fatalf("a's term ended while renewed: %v", context.Cause(ta.Context()))
		}
		select {
		case r := <-bc:
			t.Fatalf("b elected while a leads: %+v", r)
		default:
		}
		wantNil(t, "Resign(a)", ta.Resign(ctx))
		if c := context.Cause(ta.Context()); !errors.Is(c, lock.ErrResigned) {
			t.Errorf("a's term cause = %v; want ErrResigned", c)
		}
		wantNil(t, "Resign(a) again", ta.Resign(ctx))
		r := <-bc
		wantNil(t, "Campaign(b)", r.err)
		if r.t.Fence() <= ta.Fence() {
			t.Errorf("b's fence %d; want above a's %d", r.t.Fence(), ta.Fence())
		}
		if ld, _ := ea.Leader(ctx); ld.Holder != "b" {
			t.Errorf("Leader() = %+v; want b", ld)
		}
		// The role is taken over behind b's back: b's term is lost.
		m.Expire("leader")
		tc, err := ebTry.Campaign(ctx)
		wantNil(t, "Campaign(b again) after expiry", err)
		<-r.t.Context().Done()
		if c := context.Cause(r.t.Context()); !errors.Is(c, lock.ErrLost) {
			t.Errorf("b's first term cause = %v; want ErrLost", c)
		}
		wantIs(t, "Resign(lost term)", r.t.Resign(ctx), lock.ErrLost)
		if ok, _ := lb.IsLocked(ctx, "leader"); !ok {
			t.Errorf("Resign of a lost term freed its successor's role")
		}
		wantNil(t, "Resign(c)", tc.Resign(ctx))
		noResidue(t, m)
	})
}

func TestContractElectionStalledRenewals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		l := mustSingle(t, m, nil)
		e, err := lock.NewElection(l, "leader", 3*time.Second)
		wantNil(t, "NewElection", err)
		term, err := e.Campaign(ctx)
		wantNil(t, "Campaign", err)
		m.Inject(memory.Fault{Ops: memory.OpExtend, Delay: time.Hour, Times: memory.Always})
		end := term.ValidUntil()
		time.Sleep(time.Until(end) - time.Nanosecond)
		if err := term.Context().Err(); err != nil {
			t.Errorf("term ctx Err just before its end = %v; want nil", err)
		}
		time.Sleep(time.Nanosecond)
		if err := term.Context().Err(); err == nil {
			t.Errorf("term ctx Err at its end = nil; want the loss")
		}
		if c := context.Cause(term.Context()); !errors.Is(c, lock.ErrLost) {
			t.Errorf("cause = %v; want ErrLost", c)
		}
		// Nobody else elected before the lock's validity.
		other := mustSingle(t, m, nil)
		if _, err := other.TryLock(ctx, "leader", time.Second); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("TryLock(role) by another at the term's end = %v; want ErrNotAcquired", err)
		}
		m.ClearFaults()
		err = term.Resign(ctx)
		wantIs(t, "Resign(stalled term)", err, lock.ErrLost)
		time.Sleep(5 * time.Second)
		noResidue(t, m)
	})
}

func TestContractElectionLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		e, err := lock.NewElection(l, "leader", 3*time.Second)
		wantNil(t, "NewElection", err)
		ctx, cancel := context.WithCancel(context.Background())
		errFn := errors.New("fn")
		err = e.Lead(ctx, func(ctx context.Context, term *lock.Term) error {
			if ok, _ := l.IsLocked(ctx, "leader"); !ok {
				t.Errorf("role not held while leading")
			}
			cancel()
			<-ctx.Done()
			return errFn
		})
		if !errors.Is(err, errFn) {
			t.Errorf("Lead = %v; want fn's error", err)
		}
		noResidue(t, m)
		// MaxHold ends a term with ErrMaxHold.
		e2, err := lock.NewElection(l, "leader", 3*time.Second, lock.MaxHold(10*time.Second))
		wantNil(t, "NewElection(MaxHold)", err)
		start := time.Now()
		err = e2.Lead(context.Background(), func(ctx context.Context, term *lock.Term) error {
			<-ctx.Done()
			if c := context.Cause(ctx); !errors.Is(c, lock.ErrMaxHold) {
				t.Errorf("term cause = %v; want ErrMaxHold", c)
			}
			if d := time.Since(start); d != 10*time.Second {
				t.Errorf("MaxHold(10s) ended the term after %v", d)
			}
			return nil
		})
		if !errors.Is(err, lock.ErrMaxHold) {
			t.Errorf("Lead ended by MaxHold = %v; want ErrMaxHold, as Run returns", err)
		}
		noResidue(t, m)
	})
}

// Election.Leader: "With a MultiLocker, a role held on some stores only
// counts as led." MultiLocker.Holder reports "", false when no holder has
// a quorum, so Leader must not take that as "not led" without asking
// IsLocked (fixed in election.go; the test failed before).
func TestContractLeaderMinorityCountsAsLed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ms, ls := memStores(3)
		multi := mustMulti(t, ls, nil)
		minority := mustSingle(t, ms[0], &lock.Options{Holder: "x"})
		k, err := minority.TryLock(ctx, "leader", time.Minute)
		wantNil(t, "TryLock on one store", err)
		e, err := lock.NewElection(multi, "leader", time.Minute)
		wantNil(t, "NewElection", err)
		if ok, _ := multi.IsLocked(ctx, "leader"); !ok {
			t.Fatalf("IsLocked = false")
		}
		ld, err := e.Leader(ctx)
		if err != nil || !ld.Elected {
			t.Errorf("Leader() with the role held on 1 of 3 stores = %+v, %v; want Elected (doc: held on some stores only counts as led)", ld, err)
		}
		wantNil(t, "Unlock", minority.Unlock(ctx, k))
	})
}

type rvKey struct{}

// TestContractContextValuesAndPanics: a term's context carries Campaign's
// values; FromContext works on contexts derived from fn's; Lead resigns
// when fn panics.
func TestContractContextValuesAndPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		ctx := context.WithValue(context.Background(), rvKey{}, "v")
		e, err := lock.NewElection(l, "leader", 3*time.Second)
		wantNil(t, "NewElection", err)
		term, err := e.Campaign(ctx)
		wantNil(t, "Campaign", err)
		if term.Context().Value(rvKey{}) != "v" {
			t.Errorf("term context lost Campaign's values")
		}
		wantNil(t, "Resign", term.Resign(ctx))
		err = lock.Run(ctx, l, "r", time.Second, func(ctx context.Context, k lock.Lock) error {
			derived, cancel := context.WithCancel(context.WithValue(ctx, rvKey{}, "w"))
			defer cancel()
			if got, ok := lock.FromContext(derived); !ok || got.Token != k.Token {
				t.Errorf("FromContext(derived) = %+v, %v", got, ok)
			}
			if ctx.Value(rvKey{}) != "v" {
				t.Errorf("fn's context lost Run's values")
			}
			return nil
		})
		wantNil(t, "Run", err)
		func() {
			defer func() {
				if p := recover(); p != "boom" {
					t.Errorf("Lead: recover() = %v; want the panic to continue", p)
				}
			}()
			_ = e.Lead(ctx, func(context.Context, *lock.Term) error { panic("boom") })
		}()
		noResidue(t, m)
	})
}

// TestContractElectionOneLeaderAtATime: campaigners over both lockers lead
// in turn, never two at once, with rising fences.
func TestContractElectionOneLeaderAtATime(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		var leading atomic.Int32
		var mu sync.Mutex
		var fences []uint64
		var wg sync.WaitGroup
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e, err := lock.NewElection(l, "leader", 3*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				for range 3 {
					err := e.Lead(context.Background(), func(ctx context.Context, term *lock.Term) error {
						if leading.Add(1) != 1 {
							t.Errorf("two leaders at once")
						}
						mu.Lock()
						fences = append(fences, term.Fence())
						mu.Unlock()
						time.Sleep(5 * time.Second)
						if ctx.Err() != nil {
							t.Errorf("term ended while renewed: %v", context.Cause(ctx))
						}
						leading.Add(-1)
						return nil
					})
					if err != nil {
						t.Errorf("Lead = %v", err)
					}
				}
			}()
		}
		wg.Wait()
		for i := 1; i < len(fences); i++ {
			if fences[i] <= fences[i-1] {
				t.Errorf("term %d fence %d after %d; want rising", i, fences[i], fences[i-1])
			}
		}
		if len(fences) != 15 {
			t.Errorf("%d terms; want 15", len(fences))
		}
		noResidue(t, ms...)
	})
}
