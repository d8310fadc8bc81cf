package redissuite

import (
	"testing"
	"time"

	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// testRaiseFenceToMax: after RaiseFence(r, MaxFence), the largest fence
// it takes, the fences of r's locks and permits, from the lift script, the
// plain INCR and the permit script, still increase strictly and stay
// below 2^53, where the scripts' numbers are exact. (MaxFence was 2^53:
// the counter then went past it, the scripts rounded their INCR's answer
// to an even number, and permits got the same fence twice.)
func (f Factory) testRaiseFenceToMax(t *testing.T) {
	s := f.Server(t, redistest.Start(t))
	ctx := ctxFor(t, 10*time.Second)
	if err := s.RaiseFence(ctx, "r", redisstore.MaxFence); err != nil {
		t.Fatalf("RaiseFence(r, MaxFence) = %v; want nil", err)
	}
	last := uint64(redisstore.MaxFence)
	next := func(what string, fence uint64) {
		t.Helper()
		if fence <= last || fence >= 1<<53 {
			t.Fatalf("%s fence after %d = %d; want greater, and below 2^53", what, last, fence)
		}
		last = fence
	}
	for range 3 {
		next("lock", fencedCycle(t, ctx, s, "r"))
		fence, err := s.AcquirePermit(ctx, "r", "tok", 1, time.Minute)
		if err != nil {
			t.Fatalf("AcquirePermit(r) = %v; want nil", err)
		}
		next("permit", fence)
		if err := s.ReleasePermit(ctx, "r", "tok"); err != nil {
			t.Fatalf("ReleasePermit(r) = %v; want nil", err)
		}
	}
}
