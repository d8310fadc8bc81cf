package memory_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A permit waiter whose timer runs out while the permits are still held
// (their holder extended them) looks again and keeps its place in line:
// the next release wakes it, the longest-waiting caller, not one that
// began waiting after it, as WaitPermit's doc and the package doc say
// ("in arrival order"), and as WaitRelease does.
func TestWaitPermitKeepsPlaceWhenLookingAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		s := memory.New()
		if _, err := s.AcquirePermit(ctx, "r", "h", 1, time.Minute); err != nil {
			t.Fatalf("AcquirePermit(r, h, 1, 1m) = %v", err)
		}
		woke := make(chan string, 2)
		wait := func(name string) {
			go func() {
				if err := s.WaitPermit(ctx, "r"); err == nil {
					woke <- name
				}
			}()
			synctest.Wait()
		}
		wait("a") // its timer runs to h's expiry, 1m from now
		time.Sleep(30 * time.Second)
		if err := s.ExtendPermit(ctx, "r", "h", time.Minute); err != nil {
			t.Fatalf("ExtendPermit(r, h, 1m) = %v", err)
		}
		time.Sleep(time.Second)
		wait("b")                    // after a, its timer at h's new expiry
		time.Sleep(40 * time.Second) // a's timer runs out: a looks again
		if n := len(woke); n != 0 {
			t.Fatalf("%d waiters returned while h held the only permit; want none", n)
		}
		if err := s.ReleasePermit(ctx, "r", "h"); err != nil {
			t.Fatalf("ReleasePermit(r, h) = %v", err)
		}
		synctest.Wait()
		if n := len(woke); n != 1 {
			t.Fatalf("%d waiters woke after one release; want 1", n)
		}
		if first := <-woke; first != "a" {
			t.Fatalf("waiter %s woke first after ReleasePermit; want a, which waited longest (it looked again when its timer ran out)", first)
		}
		cancel() // b's wait ends
		synctest.Wait()
	})
}

// A TTL as long as a time.Duration goes (math.MaxInt64, "for ever") holds
// the lock, as any TTL does: it is not wrapped around into a lock that
// has already expired while Acquire, Extend and AcquirePermit report
// success.
func TestLongestTTLHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := memory.New()
		time.Sleep(time.Second) // the store's clock is past its epoch
		const forever = time.Duration(math.MaxInt64)
		if err := s.Acquire(ctx, "r", "a", forever); err != nil {
			t.Fatalf("Acquire(r, a, MaxInt64) = %v; want nil", err)
		}
		if held, err := s.Exists(ctx, "r"); err != nil || !held {
			t.Fatalf("Exists(r) after Acquire(r, a, MaxInt64) = %v, %v; want true", held, err)
		}
		if err := s.Acquire(ctx, "r", "b", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Acquire(r, b) while a holds r for MaxInt64 = %v; want ErrNotAcquired", err)
		}
		if err := s.Acquire(ctx, "e", "a", time.Minute); err != nil {
			t.Fatalf("Acquire(e, a, 1m) = %v", err)
		}
		if err := s.Extend(ctx, "e", "a", forever); err != nil {
			t.Fatalf("Extend(e, a, MaxInt64) = %v; want nil", err)
		}
		time.Sleep(time.Hour)
		if held, err := s.Exists(ctx, "e"); err != nil || !held {
			t.Fatalf("Exists(e) an hour after Extend(e, a, MaxInt64) = %v, %v; want true", held, err)
		}
		if _, err := s.AcquirePermit(ctx, "p", "a", 1, forever); err != nil {
			t.Fatalf("AcquirePermit(p, a, 1, MaxInt64) = %v; want nil", err)
		}
		if n, err := s.Permits(ctx, "p"); err != nil || n != 1 {
			t.Fatalf("Permits(p) after AcquirePermit(p, a, 1, MaxInt64) = %d, %v; want 1", n, err)
		}
	})
}
