package goredis

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
)

// TestPermitLostReplyIsNotAnOutcome: a permit operation whose reply is
// lost is an error, never lock.ErrNotAcquired or lock.ErrNotHeld, and
// the client does not send it again.
func TestPermitLostReplyIsNotAnOutcome(t *testing.T) {
	l := newLossy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	warmPermits(t, ctx, l)
	outcome := func(err error) bool { return errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) }

	l.loseReplies(t, ctx)
	if _, err := l.store.AcquirePermit(ctx, "p", "tok", 2, time.Minute); err == nil || outcome(err) {
		t.Errorf("AcquirePermit with its reply lost = %v; want a transport error", err)
	}
	if n, err := l.srv.Do("ZCARD", redisstore.PermitsKey("lossy:", "p")).AsInt64(); err != nil || n != 2 {
		t.Fatalf("ZCARD of the permits = %d, %v; want the permit and the limit: the server should have run the script", n, err)
	}
	l.loseReplies(t, ctx)
	if err := l.store.ReleasePermit(ctx, "p", "tok"); err == nil || outcome(err) {
		t.Errorf("ReleasePermit with its reply lost = %v; want a transport error", err)
	}
	if n := l.dials.Load(); n != 1 {
		t.Errorf("the client dialed %d more times after the lost replies; want none (no retry)", n-1)
	}
}

// TestPermitResentResolvedByToken: should the client send a permit's
// acquisition again after its reply was lost, the second send finds the
// permit held under its token and succeeds, with a fence above the first
// send's; a resent release that finds nothing to release reports an
// unknown outcome, not lock.ErrNotHeld.
func TestPermitResentResolvedByToken(t *testing.T) {
	letClientRetry.Store(true)
	t.Cleanup(func() { letClientRetry.Store(false) })
	l := newLossy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	warmPermits(t, ctx, l)

	l.loseReplies(t, ctx)
	fence, err := l.store.AcquirePermit(ctx, "p", "tok", 1, time.Minute)
	if err != nil {
		t.Fatalf("AcquirePermit sent twice, the first taking the permit = %v; want nil", err)
	}
	if n := l.dials.Load(); n < 2 {
		t.Fatalf("the client did not send the command again (dials %d); the test tests nothing", n)
	}
	if v := l.get(t, FenceKey); v != strconv.FormatUint(fence, 10) {
		t.Errorf("AcquirePermit sent twice returned fence %d; the counter holds %s", fence, v)
	}
	if n, err := l.store.Permits(ctx, "p"); err != nil || n != 1 {
		t.Errorf("Permits after a resent acquisition = %d, %v; want 1", n, err)
	}

	l.loseReplies(t, ctx)
	err = l.store.ReleasePermit(ctx, "p", "tok")
	if err == nil || errors.Is(err, lock.ErrNotHeld) || !errors.Is(err, redisstore.ErrUnknownOutcome) {
		t.Errorf("ReleasePermit sent twice, the first releasing = %v; want an unknown outcome, not lock.ErrNotHeld", err)
	}
	if n, err := l.store.Permits(ctx, "p"); err != nil || n != 0 {
		t.Errorf("Permits after the release = %d, %v; want 0", n, err)
	}
}

// warmPermits loads the permit scripts, so that a lost reply is that of
// a script that ran rather than of a NOSCRIPT.
func warmPermits(t *testing.T, ctx context.Context, l *lossy) {
	t.Helper()
	if _, err := l.store.AcquirePermit(ctx, "warm", "tok", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := l.store.ReleasePermit(ctx, "warm", "tok"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.store.Permits(ctx, "warm"); err != nil {
		t.Fatal(err)
	}
}
