package memory_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// RaiseFence takes fences up to 2^63-2, and the fences after it go on
// increasing; above that it refuses the raise, which would let the fences
// that follow wrap around to 0, and changes nothing.
func TestRaiseFenceToMax(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	for _, fence := range []uint64{math.MaxInt64, math.MaxUint64 - 1, math.MaxUint64} {
		if err := s.RaiseFence(ctx, "r", fence); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("RaiseFence(r, %d) = %v; want ErrInvalid", fence, err)
		}
	}
	last, err := s.AcquireFenced(ctx, "r", "a", time.Minute)
	if err != nil || last >= math.MaxInt64-1 {
		t.Fatalf("AcquireFenced(r, a) after refused raises = %d, %v; want a small fence", last, err)
	}
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.RaiseFence(ctx, "r", math.MaxInt64-1); err != nil {
		t.Fatalf("RaiseFence(r, 2^63-2) = %v; want nil", err)
	}
	last = math.MaxInt64 - 1
	for i := range 3 {
		f, err := s.AcquireFenced(ctx, "r", "a", time.Minute)
		if err != nil || f <= last {
			t.Fatalf("AcquireFenced #%d after RaiseFence(r, 2^63-2) = %d, %v; want a fence above %d", i+1, f, err, last)
		}
		if err := s.Release(ctx, "r", "a"); err != nil {
			t.Fatal(err)
		}
		last = f
	}
}
