package redis_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// Review finding (fails on the reviewed code; run with
// LOCKKIT_REVIEW_FINDINGS=1): lock.Waiter's WaitRelease must return when
// the lock "is released or expires". A waiter arms its expiry timer with
// the PTTL it saw when it got in line (internal/redisstore/wait.go, the
// expiry timer from wait.lua's reply); when the holder then extends the
// lock to a shorter TTL (legal: Extend sets the TTL to ttl from now) and
// vanishes, or a woken waiter takes it with a shorter TTL and vanishes,
// nothing tells the waiter that the resource expired sooner: it sleeps on
// to the old expiry (here 30s) while the resource has been free for
// most of it.
func TestReviewFindingWaiterMissesEarlierExpiry(t *testing.T) {
	if os.Getenv("LOCKKIT_REVIEW_FINDINGS") == "" {
		t.Skip("review finding (fails on the reviewed code): set LOCKKIT_REVIEW_FINDINGS=1 to run")
	}
	ctx := context.Background()
	s := newStore(t, redistest.Start(t).NewClient(t))
	a, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := lock.NewSingle(s, nil)
	ka, err := a.TryLock(ctx, "r", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := c.Lock(cctx, "r", 30*time.Second)
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // c is in line
	if _, err := a.Extend(ctx, ka, time.Second); err != nil {
		t.Fatal(err)
	}
	// a vanishes: its lock expires 1s from now, unreleased.
	if err := <-done; err != nil {
		t.Errorf("Lock of a resource whose holder's lock expired after 1s = %v within 10s; want it acquired after about 1s", err)
	}
}
