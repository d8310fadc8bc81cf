package memory_test

// Checks of what the package's documentation promises and the other tests
// do not cover.

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// "TTLs are exact: the store has no granularity": a lock is held until
// the very nanosecond its TTL ends, a waiter wakes at that instant, and
// the lockers take no granularity off its validity.
func TestDocTTLsAreExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := memory.New()
		const ttl = 1500 * time.Nanosecond
		start := time.Now()
		if err := s.Acquire(ctx, "r", "a", ttl); err != nil {
			t.Fatal(err)
		}
		if d, held, err := s.TTL(ctx, "r"); err != nil || !held || d != ttl {
			t.Errorf("TTL(r) at once = %v, %v, %v; want exactly %v", d, held, err, ttl)
		}
		woken := make(chan time.Time, 1)
		go func() {
			if err := s.WaitRelease(ctx, "r"); err != nil {
				t.Errorf("WaitRelease(r) = %v", err)
			}
			woken <- time.Now()
		}()
		time.Sleep(ttl - time.Nanosecond)
		if held, err := s.Exists(ctx, "r"); err != nil || !held {
			t.Errorf("Exists(r) 1ns before the TTL ends = %v, %v; want true", held, err)
		}
		time.Sleep(time.Nanosecond)
		if held, err := s.Exists(ctx, "r"); err != nil || held {
			t.Errorf("Exists(r) as the TTL ends = %v, %v; want false", held, err)
		}
		if at := (<-woken).Sub(start); at != ttl {
			t.Errorf("WaitRelease(r) returned %v after the acquisition; want at the expiry, %v", at, ttl)
		}
		if err := s.Extend(ctx, "r", "a", time.Minute); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Extend(r, a) after the expiry = %v; want ErrNotHeld", err)
		}

		locker, err := lock.NewSingle(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		l, err := locker.TryLock(ctx, "v", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// The drift allowance only: 1s × 1% + 2ms.
		if want := start.Add(time.Second - 12*time.Millisecond); !l.ValidUntil.Equal(want) {
			t.Errorf("ValidUntil of a lock of 1s = start + %v; want start + 988ms (no granularity taken off)", l.ValidUntil.Sub(start))
		}
	})
}

// "A test that slows a store for good sleeps past that work before it
// returns: ... a time.Sleep of a second (on the fake clock) covers the
// default StoreTimeout": a bubble whose lockers leave calls to stores
// slowed for an hour under way, and releases to try again later, ends
// cleanly after such a sleep (it would panic with a deadlock otherwise).
func TestDocSlowStoreBubbleEndsAfterASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		slow := memory.Fault{Delay: time.Hour, Times: memory.Always}
		stores := []*memory.Store{memory.New(), memory.New(), memory.New()}
		stores[0].Inject(slow)
		stores[1].Inject(slow)
		single, err := lock.NewSingle(stores[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := single.TryLock(short, "r", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("SingleLocker.TryLock on a slowed store = %v; want DeadlineExceeded", err)
		}
		multi, err := lock.NewMulti([]lock.Store{stores[0], stores[1], stores[2]}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := multi.TryLock(ctx, "r", time.Minute); !errors.Is(err, lock.ErrUnavailable) {
			t.Fatalf("MultiLocker.TryLock with two of three stores slowed = %v; want ErrUnavailable", err)
		}
		time.Sleep(time.Second)
	})
}
