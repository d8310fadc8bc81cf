package redissuite

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// testTTLRoundedUp: TTLs are rounded up to whole milliseconds, as the
// package documentation says, so a TTL under a millisecond is sent as
// one — truncated, it would be PX 0, which Redis refuses — by every call
// that takes one.
func (f Factory) testTTLRoundedUp(t *testing.T) {
	s := f.Server(t, redistest.Start(t))
	ctx := ctxFor(t, 10*time.Second)
	const ttl = time.Nanosecond
	if err := s.Acquire(ctx, "a", "t", ttl); err != nil {
		t.Errorf("Acquire(a, 1ns) = %v; want nil (sent as 1ms)", err)
	}
	if _, err := s.AcquireFenced(ctx, "f", "t", ttl); err != nil {
		t.Errorf("AcquireFenced(f, 1ns) = %v; want nil (sent as 1ms)", err)
	}
	if err := s.Acquire(ctx, "e", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Extend(ctx, "e", "t", ttl); err != nil {
		t.Errorf("Extend(e, 1ns) = %v; want nil (sent as 1ms)", err)
	}
	if _, err := s.AcquirePermit(ctx, "p", "t", 2, ttl); err != nil {
		t.Errorf("AcquirePermit(p, 1ns) = %v; want nil (sent as 1ms)", err)
	}
	if _, err := s.AcquirePermit(ctx, "q", "t", 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.ExtendPermit(ctx, "q", "t", ttl); err != nil {
		t.Errorf("ExtendPermit(q, 1ns) = %v; want nil (sent as 1ms)", err)
	}
	if err := started(ctx, s, lock.Call{Op: lock.CallAcquireFenced, Resource: "s", Token: "t", TTL: ttl}); err != nil {
		t.Errorf("Start(AcquireFenced s, 1ns) = %v; want nil (sent as 1ms)", err)
	}
	if err := s.Acquire(ctx, "x", "t", time.Minute+time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	if d, held, err := s.TTL(ctx, "x"); err != nil || !held || d%time.Millisecond != 0 || d > time.Minute+time.Millisecond {
		t.Errorf("TTL(x) of a lock taken for 1m+1ns = %v, %v, %v; want held, whole milliseconds, at most 1m0.001s", d, held, err)
	}
}
