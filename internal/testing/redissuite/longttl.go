package redissuite

import (
	"math"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// forever is the longest TTL a caller can pass, as for a lock meant to
// last until released.
const forever = time.Duration(math.MaxInt64)

// testForeverTTL checks that the longest Duration is a valid TTL like any
// other: rounded up to whole milliseconds it once wrapped to a negative
// number, which SET refused with a server error, PEXPIRE took as "delete
// now" (Extend reported success and the lock was gone), the permit script
// took as already expired (AcquirePermit granted a permit that was not
// there) and the restart guard took as no wait at all.
func (f Factory) testForeverTTL(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, 10*time.Second)
	held := func(call, r string) {
		t.Helper()
		ttl, ok, err := s.TTL(ctx, r)
		if err != nil || !ok || ttl < 200*365*24*time.Hour {
			t.Errorf("TTL(%s) after %s = %v, %v, %v; want over 200 years, true, nil", r, call, ttl, ok, err)
		}
	}
	if err := s.Acquire(ctx, "a", "tok", forever); err != nil {
		t.Errorf("Acquire(a, MaxInt64) = %v; want nil", err)
	}
	held("Acquire", "a")
	if _, err := s.AcquireFenced(ctx, "f", "tok", forever); err != nil {
		t.Errorf("AcquireFenced(f, MaxInt64) = %v; want nil", err)
	}
	held("AcquireFenced", "f")
	if err := s.Acquire(ctx, "e", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Extend(ctx, "e", "tok", forever); err != nil {
		t.Errorf("Extend(e, MaxInt64) = %v; want nil", err)
	}
	held("Extend", "e")

	if _, err := s.AcquirePermit(ctx, "p", "tok", 2, forever); err != nil {
		t.Errorf("AcquirePermit(p, MaxInt64) = %v; want nil", err)
	}
	if n, err := s.Permits(ctx, "p"); n != 1 || err != nil {
		t.Errorf("Permits(p) after AcquirePermit(MaxInt64) = %d, %v; want 1, nil", n, err)
	}
	if err := s.ExtendPermit(ctx, "p", "tok", forever); err != nil {
		t.Errorf("ExtendPermit(p, MaxInt64) = %v; want nil", err)
	}
	if n, err := s.Permits(ctx, "p"); n != 1 || err != nil {
		t.Errorf("Permits(p) after ExtendPermit(MaxInt64) = %d, %v; want 1, nil", n, err)
	}

	guarded := f.Server(t, redistest.Start(t), redisstore.WithRestartGuard(forever))
	recovering(t, "Acquire on a fresh server under WithRestartGuard(MaxInt64)", guarded.Acquire(ctx, "g", "tok", time.Second))
	recovering(t, "Acquire again under WithRestartGuard(MaxInt64)", guarded.Acquire(ctx, "g", "tok", time.Second))
}
