package memory

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// A release wakes one waiter per freed permit, in arrival order.
func TestWaitPermitWakesOnePerRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := New()
		for i := range 2 {
			if _, err := s.AcquirePermit(ctx, "r", fmt.Sprint("h", i), 2, time.Hour); err != nil {
				t.Fatalf("AcquirePermit(r, h%d) = %v", i, err)
			}
		}
		woke := make(chan int, 3)
		for i := range 3 {
			go func() {
				if err := s.WaitPermit(ctx, "r"); err == nil {
					woke <- i
				}
			}()
			synctest.Wait() // in arrival order
		}
		if err := s.ReleasePermit(ctx, "r", "h0"); err != nil {
			t.Fatalf("ReleasePermit(r, h0) = %v", err)
		}
		synctest.Wait()
		if n := len(woke); n != 1 {
			t.Fatalf("%d waiters woke after one release; want 1", n)
		}
		if first := <-woke; first != 0 {
			t.Fatalf("waiter %d woke first; want 0, the longest waiting", first)
		}
		if n := s.ExpirePermits("r"); n != 1 {
			t.Fatalf("ExpirePermits(r) = %d; want 1", n)
		}
		synctest.Wait()
		if n := len(woke); n != 1 {
			t.Fatalf("%d waiters woke after ExpirePermits freed one permit; want 1", n)
		}
	})
}

// A waiter wakes when a permit expires, also one whose TTL was shortened
// after the waiter began.
func TestWaitPermitWakesOnExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := New()
		for i := range 2 {
			if _, err := s.AcquirePermit(ctx, "r", fmt.Sprint("h", i), 2, time.Hour); err != nil {
				t.Fatalf("AcquirePermit(r, h%d) = %v", i, err)
			}
		}
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- s.WaitPermit(ctx, "r") }()
		synctest.Wait()
		if err := s.ExtendPermit(ctx, "r", "h1", time.Second); err != nil {
			t.Fatalf("ExtendPermit(r, h1, 1s) = %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("WaitPermit(r) = %v; want nil", err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("WaitPermit(r) returned after %v; want 1s, when h1's shortened permit expired", waited)
		}
	})
}

// A resource's permits leave nothing behind once released, and once
// expired when next looked at (or when the shard is swept, as it grows).
func TestPermitsLeaveNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := New()
		sets := func() (n int) {
			for i := range s.shards {
				n += len(s.shards[i].permits.sets)
			}
			return n
		}
		for i := range 1000 {
			r := fmt.Sprint("r", i)
			if _, err := s.AcquirePermit(ctx, r, "a", 3, time.Second); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				if err := s.ReleasePermit(ctx, r, "a"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if n := sets(); n != 500 {
			t.Fatalf("%d permit sets with 500 permits held; want 500", n)
		}
		time.Sleep(2 * time.Second) // the others expire
		for i := range 1000 {
			if n, err := s.Permits(ctx, fmt.Sprint("r", i)); n != 0 || err != nil {
				t.Fatalf("Permits(r%d) after expiry = %d, %v; want 0, nil", i, n, err)
			}
		}
		if n := sets(); n != 0 {
			t.Errorf("%d permit sets left after every permit was released or expired; want 0", n)
		}
	})
}
