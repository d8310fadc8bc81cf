package lock_test

// Elections and RunOnce at the edges of their documented contracts.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A term ended by MaxHold leaves its lock to run out: the Resign that the
// docs ask for in every case then finds it not held, which is no error.
func TestElectionResignAfterMaxHoldAndExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second, lock.MaxHold(2*time.Second))
		term, err := e.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		<-term.Context().Done()
		time.Sleep(5 * time.Second) // the lock, no longer renewed, runs out
		wantNil(t, "Resign() after MaxHold and the lock's expiry", term.Resign(t.Context()))

		err = e.Lead(t.Context(), func(ctx context.Context, _ *lock.Term) error {
			<-ctx.Done()
			time.Sleep(5 * time.Second)
			return nil
		})
		wantIs(t, "Lead() whose fn outlived MaxHold and the lock", err, lock.ErrMaxHold)
		if errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Lead() whose fn outlived MaxHold and the lock = %v; want no ErrNotHeld", err)
		}
	})
}

func TestElectionFencesRisePerTermOnEverySetup(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		if !canExtend(t, newLocker(t)) {
			t.Skip("terms are lost at their validity without Extender")
		}
		var last uint64
		for i := range 4 {
			e := mustElection(t, newLocker(t), "leader", time.Second)
			term, err := e.Campaign(t.Context())
			wantNil(t, "Campaign()", err)
			if term.Fence() != term.Lock().Fence {
				t.Errorf("term %d: Fence() = %d, Lock().Fence = %d; want equal", i, term.Fence(), term.Lock().Fence)
			}
			if term.Fence() != 0 && term.Fence() <= last {
				t.Errorf("term %d: fence %d after %d; want strictly greater", i, term.Fence(), last)
			}
			last = term.Fence()
			time.Sleep(2 * time.Second)
			if i%2 == 0 {
				wantNil(t, "Resign()", term.Resign(t.Context()))
			} else {
				mustSingleExpire(mems)
				<-term.Context().Done()
				_ = term.Resign(t.Context())
			}
		}
	})
}

func mustSingleExpire(mems []*memory.Store) {
	for _, m := range mems {
		m.Expire("leader")
	}
}

func TestElectionLockerShutdownEndsTheTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		e := mustElection(t, l, "leader", time.Second)
		term, err := e.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		wantNil(t, "Shutdown()", l.Shutdown(t.Context()))
		if term.Context().Err() == nil {
			t.Fatal("term's context after Shutdown: not ended")
		}
		cause := context.Cause(term.Context())
		wantIs(t, "term cause after Shutdown", cause, lock.ErrLost)
		wantIs(t, "term cause after Shutdown", cause, lock.ErrClosed)
		err = term.Resign(t.Context())
		wantIs(t, "Resign() after Shutdown", err, lock.ErrLost)
		if got, err := e.Leader(t.Context()); err != nil || got.Elected {
			t.Errorf("Leader() after Shutdown = %+v, %v; want not elected", got, err)
		}
		_, err = e.Campaign(t.Context())
		wantIs(t, "Campaign() after Shutdown", err, lock.ErrClosed)
	})
}

func TestElectionConcurrentResign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
		term, err := e.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if err := term.Resign(t.Context()); err != nil {
					t.Errorf("Resign() = %v", err)
				}
				_ = term.Lock()
				_ = term.ValidUntil()
			})
		}
		wg.Wait()
		wantIs(t, "cause", context.Cause(term.Context()), lock.ErrResigned)
		noResidue(t, m)
		if got, _ := e.Leader(t.Context()); got.Elected {
			t.Error("Leader() after Resign: elected")
		}
	})
}

func TestElectionLeadResignsOnPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Errorf("recover() = %v; want boom", r)
				}
			}()
			_ = e.Lead(t.Context(), func(ctx context.Context, _ *lock.Term) error { panic("boom") })
		}()
		noResidue(t, m)
	})
}

func TestElectionTermCarriesCampaignValues(t *testing.T) {
	type key struct{}
	m := memory.New()
	e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
	ctx := context.WithValue(t.Context(), key{}, "v")
	term, err := e.Campaign(ctx)
	wantNil(t, "Campaign()", err)
	if term.Context().Value(key{}) != "v" {
		t.Error("term's context lacks Campaign's values")
	}
	wantNil(t, "Resign()", term.Resign(t.Context()))
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	err = e.Lead(canceled, func(context.Context, *lock.Term) error { t.Error("fn ran"); return nil })
	wantIs(t, "Lead(canceled)", err, context.Canceled)
}

func TestRunOnceIntervalEdges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		ctx := t.Context()
		ok := func(context.Context, lock.Lock) error { return nil }
		// A short interval shortens a long TTL.
		wantNil(t, "RunOnce(ttl 1m, MinInterval 10s)", lock.RunOnce(ctx, l, "job", time.Minute, ok, lock.MinInterval(10*time.Second)))
		wantIs(t, "RunOnce() within the interval", lock.RunOnce(ctx, l, "job", time.Minute, ok), lock.ErrSkipped)
		time.Sleep(11 * time.Second)
		wantNil(t, "RunOnce() after the interval", lock.RunOnce(ctx, l, "job", time.Minute, ok))
		// UnlockAll frees a kept lock early.
		wantNil(t, "RunOnce(MinInterval 1h)", lock.RunOnce(ctx, l, "job", time.Minute, ok, lock.MinInterval(time.Hour)))
		wantNil(t, "UnlockAll()", l.UnlockAll(ctx))
		wantNil(t, "RunOnce() after UnlockAll", lock.RunOnce(ctx, l, "job", time.Minute, ok))
		// fn's error is returned; the interval is kept all the same.
		boom := errors.New("boom")
		err := lock.RunOnce(ctx, l, "job", time.Minute, func(context.Context, lock.Lock) error { return boom }, lock.MinInterval(time.Hour))
		wantIs(t, "RunOnce(fn fails)", err, boom)
		wantIs(t, "RunOnce() after a failed run within the interval", lock.RunOnce(ctx, l, "job", time.Minute, ok), lock.ErrSkipped)
		// Shutdown frees it and refuses with ErrClosed, not a skip.
		wantNil(t, "Shutdown()", l.Shutdown(ctx))
		noResidue(t, m)
		err = lock.RunOnce(ctx, l, "job", time.Minute, ok)
		wantIs(t, "RunOnce() over a shut locker", err, lock.ErrClosed)
		if errors.Is(err, lock.ErrSkipped) {
			t.Errorf("RunOnce() over a shut locker = %v; want no skip", err)
		}
	})
}

// With LockDelay, a MinInterval lock left to expire is free at the
// interval's end, as MinInterval says, not a lock delay later; an
// interval no longer than the delay is kept for the delay.
func TestRunOnceMinIntervalWithLockDelay(t *testing.T) {
	for _, tc := range []struct{ interval, free time.Duration }{
		{10 * time.Minute, 10 * time.Minute},
		{30 * time.Second, time.Minute + 30*time.Second},
	} {
		t.Run(tc.interval.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := memory.New()
				l := mustSingle(t, m, &lock.Options{LockDelay: time.Minute})
				ctx := t.Context()
				ok := func(context.Context, lock.Lock) error { return nil }
				wantNil(t, "RunOnce(MinInterval)", lock.RunOnce(ctx, l, "job", time.Second, ok, lock.MinInterval(tc.interval)))
				time.Sleep(tc.interval - time.Second)
				wantIs(t, "RunOnce() within the interval", lock.RunOnce(ctx, l, "job", time.Second, ok), lock.ErrSkipped)
				time.Sleep(tc.free - tc.interval + 2*time.Second)
				if err := lock.RunOnce(ctx, l, "job", time.Second, ok); err != nil {
					t.Errorf("RunOnce() %v after a run with MinInterval(%v), LockDelay 1m = %v; want nil", tc.free+time.Second, tc.interval, err)
				}
			})
		})
	}
}

func TestRunOncePanicReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		func() {
			defer func() { _ = recover() }()
			_ = lock.RunOnce(t.Context(), l, "job", time.Second, func(context.Context, lock.Lock) error { panic("boom") })
		}()
		noResidue(t, m)
	})
}
