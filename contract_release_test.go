package lock_test

// What a holder's function leaves behind: once Run, RunOnce or a term is
// done with its lock, nothing it handed out says the lock may still be
// relied on — FromContext's Valid, the term's ValidUntil and Lock — and
// the context has ended before the lock is released.

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/stores/memory"
)

// releaseWatch is a memory store that calls onRelease before each
// release reaches the store.
type releaseWatch struct {
	*memory.Store
	onRelease func()
}

func (w *releaseWatch) Release(ctx context.Context, r, tok string) error {
	if w.onRelease != nil {
		w.onRelease()
	}
	return w.Store.Release(ctx, r, tok)
}

// claimEnded fails the test if ctx, a holder's context, is still alive
// or FromContext(ctx) still reports a valid lock.
func claimEnded(t *testing.T, when string, ctx context.Context) {
	t.Helper()
	if ctx.Err() == nil {
		t.Errorf("%s: the holder's context Err() = nil; want it ended", when)
	}
	if l, ok := lock.FromContext(ctx); !ok || l.Valid() {
		t.Errorf("%s: FromContext(ctx) = valid %v, %v; want a lock that is no longer valid", when, l.Valid(), ok)
	}
}

func TestContractRunEndsItsClaimBeforeTheRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &releaseWatch{Store: memory.New()}
		l := mustSingle(t, w, nil)
		var fctx context.Context
		w.onRelease = func() { claimEnded(t, "Run's release", fctx) }
		err := lock.Run(t.Context(), l, "r", time.Minute, func(ctx context.Context, _ lock.Lock) error {
			fctx = ctx
			return nil
		})
		wantNil(t, "Run()", err)
		claimEnded(t, "after Run returned", fctx)
		noResidue(t, w.Store)
	})
}

func TestContractRunOnceEndsItsClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &releaseWatch{Store: memory.New()}
		l := mustSingle(t, w, nil)
		var fctx context.Context
		w.onRelease = func() { claimEnded(t, "RunOnce's release", fctx) }
		fn := func(ctx context.Context, _ lock.Lock) error { fctx = ctx; return nil }
		wantNil(t, "RunOnce()", lock.RunOnce(t.Context(), l, "job", time.Minute, fn))
		claimEnded(t, "after RunOnce returned", fctx)

		// With MinInterval the lock is kept, but not for the function,
		// which has returned.
		wantNil(t, "RunOnce(MinInterval(1h))", lock.RunOnce(t.Context(), l, "kept", time.Minute, fn, lock.MinInterval(time.Hour)))
		claimEnded(t, "after RunOnce(MinInterval(1h)) returned", fctx)
		if held, err := l.IsLocked(t.Context(), "kept"); err != nil || !held {
			t.Errorf("IsLocked(kept) after RunOnce(MinInterval(1h)) = %v, %v; want true, nil", held, err)
		}
	})
}

func TestContractResignEndsTheTermBeforeTheRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &releaseWatch{Store: memory.New()}
		e := mustElection(t, mustSingle(t, w, nil), "leader", time.Minute)
		term, err := e.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		ended := func(when string) {
			t.Helper()
			claimEnded(t, when, term.Context())
			if !term.ValidUntil().Before(time.Now()) {
				t.Errorf("%s: term.ValidUntil() = %v, after now (%v); want the term over", when, term.ValidUntil(), time.Now())
			}
			if term.Lock().Valid() {
				t.Errorf("%s: term.Lock().Valid() = true; want false", when)
			}
		}
		w.onRelease = func() { ended("Resign's release") }
		wantNil(t, "Resign()", term.Resign(t.Context()))
		ended("after Resign")
		noResidue(t, w.Store)
	})
}

// No goroutine outlives a term once it is resigned (also after a loss),
// nor Lead or RunOnce once they return, a lock kept for MinInterval
// included; on real time, the scheduler's own paths (under synctest a
// leak would deadlock the bubble instead).
func TestNoGoroutineLeftByTermsAndRunOnce(t *testing.T) {
	before := faultkit.Goroutines()
	ctx := context.Background()
	m := memory.New()
	l := mustSingle(t, m, nil)
	e := mustElection(t, l, "leader", time.Minute)
	term, err := e.Campaign(ctx)
	wantNil(t, "Campaign()", err)
	wantNil(t, "Resign()", term.Resign(ctx))
	term, err = e.Campaign(ctx)
	wantNil(t, "Campaign()", err)
	wantNil(t, "UnlockAll()", l.UnlockAll(ctx))
	wantIs(t, "Resign() after UnlockAll", term.Resign(ctx), lock.ErrLost)
	wantNil(t, "Lead()", e.Lead(ctx, func(context.Context, *lock.Term) error { return nil }))
	nop := func(context.Context, lock.Lock) error { return nil }
	wantNil(t, "RunOnce()", lock.RunOnce(ctx, l, "job", time.Minute, nop))
	wantNil(t, "RunOnce(MinInterval(1h))", lock.RunOnce(ctx, l, "kept", time.Minute, nop, lock.MinInterval(time.Hour)))
	if leaked := before.Leaked(5 * time.Second); len(leaked) > 0 {
		t.Errorf("%d goroutines left after the terms were resigned and Lead and RunOnce returned; want none:\n%s", len(leaked), leaked[0])
	}
	wantNil(t, "UnlockAll()", l.UnlockAll(ctx))
	noResidue(t, m)
}
