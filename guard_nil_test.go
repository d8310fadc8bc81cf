package lock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
)

// docs/reliability.md, Redlock: "with a majority down it grants nothing
// and no call hangs — each gives up at its deadline" with the context's
// error: the caller's deadline ended it, and the stores' failures are in
// the chain, but the error matches neither ErrNotAcquired nor
// ErrUnavailable (only the overall cause matches an outcome).
func TestReliabilityDocMajorityDownEndsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms, ls := memStores(5)
		l := mustMulti(t, ls, nil)
		failAlways(ms[0], ms[1], ms[2])
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := l.Lock(ctx, "r", time.Second)
		if took := time.Since(start); took != 500*time.Millisecond {
			t.Errorf("Lock() with a majority down returned after %v; want at its deadline, 500ms", took)
		}
		wantIs(t, "Lock() with a majority down", err, context.DeadlineExceeded)
		if errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrUnavailable) {
			t.Errorf("Lock() with a majority down = %v; want the context's error alone, neither ErrNotAcquired nor ErrUnavailable", err)
		}
		if !errors.Is(err, errConnReset) {
			t.Errorf("Lock() with a majority down = %v; want the stores' failures in the chain", err)
		}

		// Without a deadline to reach first, the failure is the stores'.
		_, err = l.TryLock(t.Context(), "r", time.Second)
		wantIs(t, "TryLock() with a majority down", err, lock.ErrUnavailable)
		_, err = l.Lock(t.Context(), "r", time.Second, lock.WithRetry(lock.Retry{Attempts: 3, Delay: 10 * time.Millisecond}))
		wantIs(t, "Lock(Retry{Attempts: 3}) with a majority down", err, lock.ErrUnavailable)
	})
}

// A nil *FenceGuard cannot remember a fence: Do refuses the write with
// ErrInvalid, as the package's other zero and nil values refuse calls,
// instead of panicking, and does not run it.
func TestFenceGuardNilRefuses(t *testing.T) {
	var g *lock.FenceGuard
	ran := false
	err := g.Do("k", 1, func() error { ran = true; return nil })
	wantIs(t, "(*FenceGuard)(nil).Do(k, 1, write)", err, lock.ErrInvalid)
	if ran {
		t.Error("(*FenceGuard)(nil).Do ran the write; want it refused")
	}
}
