package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
)

// TestHandoffHeadStart: after a release to a waiter, the next acquisition
// of the resource through the same store waits as long as the release
// took, once, within the window; other resources do not wait.
func TestHandoffHeadStart(t *testing.T) {
	var h handoffs
	ctx := context.Background()
	if err := h.yield(ctx, "k"); err != nil || h.n.Load() != 0 {
		t.Fatalf("yield with nothing recorded = %v (n=%d); want nil at once", err, h.n.Load())
	}
	h.record("k", time.Now().Add(-300*time.Microsecond)) // a release that took 300µs
	start := time.Now()
	if err := h.yield(ctx, "other"); err != nil || time.Since(start) > 200*time.Microsecond {
		t.Fatalf("yield for another key took %v (%v); want no wait", time.Since(start), err)
	}
	if err := h.yield(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 250*time.Microsecond {
		t.Errorf("yield after a release that took 300µs returned after %v; want about 300µs", d)
	}
	start = time.Now()
	if err := h.yield(ctx, "k"); err != nil || time.Since(start) > 200*time.Microsecond {
		t.Errorf("second yield took %v (%v); want no wait: the head start is given once", time.Since(start), err)
	}

	// Past the window, nothing waits; the wait never exceeds the window.
	h.record("old", time.Now().Add(-2*headStartWindow))
	h.record("slow", time.Now().Add(-time.Hour/2)) // took longer than any window
	start = time.Now()
	_ = h.yield(ctx, "old")
	_ = h.yield(ctx, "slow")
	if d := time.Since(start); d > headStartWindow/2 {
		t.Errorf("yields past the window took %v; want no wait", d)
	}

	// A canceled context ends the wait.
	h.record("k", time.Now().Add(-headStartWindow/2))
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := h.yield(canceled, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("yield with a canceled ctx = %v; want context.Canceled", err)
	}
}

// TestReleaseRecordsHandoff: a Release that wakes a waiter records a
// head start for the resource; one that wakes nobody does not.
func TestReleaseRecordsHandoff(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	releaser, err := New(srv.NewClient(t), WithPrefix("handoff:"))
	if err != nil {
		t.Fatal(err)
	}
	waiter, err := New(srv.NewClient(t), WithPrefix("handoff:"))
	if err != nil {
		t.Fatal(err)
	}
	if err := releaser.Acquire(ctx, "r", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := releaser.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if n := releaser.handoffs.n.Load(); n != 0 {
		t.Fatalf("a release that woke nobody recorded %d head starts; want 0", n)
	}
	if err := releaser.Acquire(ctx, "r", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	woken := make(chan error, 1)
	go func() { woken <- waiter.WaitRelease(ctx, "r") }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		n, err := srv.Do("LLEN", "handoff:{r}:waiters").AsInt64()
		if err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter did not get in line within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := releaser.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if err := <-woken; err != nil {
		t.Fatalf("WaitRelease = %v", err)
	}
	if n := releaser.handoffs.n.Load(); n != 1 {
		t.Fatalf("a release that woke a waiter recorded %d head starts; want 1", n)
	}
	if _, ok := releaser.handoffs.m[releaser.lockKey("r")]; !ok {
		t.Fatal("the head start is not for the released resource's key")
	}
}
