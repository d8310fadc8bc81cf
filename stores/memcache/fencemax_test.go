package memcache_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// RaiseFence takes fences up to 2^63-2, and the fences after it go on
// increasing; above that it refuses the raise (memcached's incr would
// wrap the fences that follow around to 0) and sends nothing.
func TestRaiseFenceToMax(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t), memcache.WithPrefix("p:"), memcache.WithFenceGuard(0))
	for _, fence := range []uint64{math.MaxInt64, math.MaxUint64 - 1, math.MaxUint64} {
		if err := s.RaiseFence(ctx(t), "r", fence); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("RaiseFence(r, %d) = %v; want ErrInvalid", fence, err)
		}
	}
	last, err := s.AcquireFenced(ctx(t), "r", "a", time.Minute)
	if err != nil || last >= math.MaxInt64-1 {
		t.Fatalf("AcquireFenced(r, a) after refused raises = %d, %v; want a fence of the clock's microseconds", last, err)
	}
	if err := s.Release(ctx(t), "r", "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.RaiseFence(ctx(t), "r", math.MaxInt64-1); err != nil {
		t.Fatalf("RaiseFence(r, 2^63-2) = %v; want nil", err)
	}
	last = math.MaxInt64 - 1
	for i := range 3 {
		f, err := s.AcquireFenced(ctx(t), "r", "a", time.Minute)
		if err != nil || f <= last {
			t.Fatalf("AcquireFenced #%d after RaiseFence(r, 2^63-2) = %d, %v; want a fence above %d", i+1, f, err, last)
		}
		if err := s.Release(ctx(t), "r", "a"); err != nil {
			t.Fatal(err)
		}
		last = f
	}
}
