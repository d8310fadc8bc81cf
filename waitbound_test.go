package lock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// countingWait is a memory store that counts its waits.
type countingWait struct {
	*memory.Store
	waits atomic.Int64
}

func (c *countingWait) WaitRelease(ctx context.Context, resource string) error {
	c.waits.Add(1)
	return c.Store.WaitRelease(ctx, resource)
}

// A waiter stays in line until the release, however short its retry
// delay: a wait cut at the delay would leave the line, try again and get
// back in at its end, passed over by everyone who came after it. The
// wait is bounded by the TTL the caller asks for.
func TestWaitOutlastsRetryDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &countingWait{Store: memory.New()}
		other := holdElsewhere(t, s.Store, "res", time.Hour)
		go func() {
			time.Sleep(2 * time.Second)
			_ = s.Release(context.Background(), "res", other.Token)
		}()
		l := mustSingle(t, s, nil)
		start := time.Now()
		_, err := l.Lock(t.Context(), "res", time.Minute, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 10 * time.Millisecond}))
		wantNil(t, "Lock(res)", err)
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("acquired %v after start; want 2s, at the release", got)
		}
		if n := s.waits.Load(); n != 1 {
			t.Errorf("Lock waited %d times for one release; want once: a wait ended by the 10ms delay loses its place in line", n)
		}

		// Without a release, the wait ends at the TTL, and Lock tries again.
		holdElsewhere(t, s.Store, "held", time.Hour)
		s.waits.Store(0)
		ctx, cancel := context.WithTimeout(t.Context(), 3500*time.Millisecond)
		defer cancel()
		_, err = l.Lock(ctx, "held", time.Second, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 10 * time.Millisecond}))
		wantIs(t, "Lock(held) held for an hour", err, context.DeadlineExceeded)
		if n := s.waits.Load(); n != 4 {
			t.Errorf("Lock(held, ttl 1s) waited %d times in 3.5s; want 4: each wait bounded by the TTL", n)
		}
	})
}

// failingWait is a memory store whose waits fail at once, as a broken
// subscription makes them.
type failingWait struct{ *memory.Store }

func (failingWait) WaitRelease(context.Context, string) error { return errConnReset }

// A wait that fails falls back to the retry delay, not to the TTL: the
// waiter polls until the store can notify again.
func TestFailedWaitSleepsTheDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := failingWait{memory.New()}
		other := holdElsewhere(t, s.Store, "res", time.Hour)
		go func() {
			time.Sleep(100 * time.Millisecond)
			_ = s.Release(context.Background(), "res", other.Token)
		}()
		l := mustSingle(t, s, nil)
		start := time.Now()
		_, err := l.Lock(t.Context(), "res", time.Minute, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 10 * time.Millisecond}))
		wantNil(t, "Lock(res)", err)
		if got := time.Since(start); got < 100*time.Millisecond || got > 110*time.Millisecond {
			t.Errorf("acquired %v after start; want within a 10ms delay of the release at 100ms", got)
		}
	})
}
