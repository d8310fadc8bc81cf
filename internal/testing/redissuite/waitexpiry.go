package redissuite

import (
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// testWaitersOfOneProcessInOrderAfterExpiry: the expiry of a permit,
// or of a lock under the restart guard — whose waiters wait with
// WaitPermit and WaitRelease, which an expiry wakes all at once — still
// serves the waiters of one process longest-waiting first, and those
// that find the lock taken keep their turn, as after a release: none is
// passed over by more than one waiter that came after it (a woken waiter
// can still lose its acquisition to one that looks again at that moment,
// and then gets back in line at the front).
func (f Factory) testWaitersOfOneProcessInOrderAfterExpiry(t *testing.T) {
	srv := redistest.Start(t)
	for _, kind := range []string{"permit", "guarded lock"} {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxFor(t, 30*time.Second)
			var opts []redisstore.Option
			if kind == "guarded lock" {
				opts = append(opts, redisstore.WithRestartGuard(2*time.Second))
			}
			s := f.Server(t, srv, append(opts, redisstore.WithPrefix("order-expiry:"))...)
			l, err := lock.NewSingle(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			var locker lock.Locker = l
			if kind == "permit" {
				if locker, err = lock.NewSemaphore(l, 1); err != nil {
					t.Fatal(err)
				}
			} else {
				// The guard grants nothing on a new server for its
				// maximum TTL.
				warm(t, ctx, s, "warm")
			}
			// A holder that vanished: its permit or lock expires.
			if _, err := locker.TryLock(ctx, "r", 600*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			const waiters = 8
			var mu sync.Mutex
			var order []int
			var wg sync.WaitGroup
			for i := range waiters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					k, err := locker.Lock(ctx, "r", 1500*time.Millisecond)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
					if err := locker.Unlock(ctx, k); err != nil {
						t.Error(err)
					}
				}()
				time.Sleep(40 * time.Millisecond)
			}
			wg.Wait()
			if len(order) != waiters {
				t.Fatalf("%d waiters served; want %d", len(order), waiters)
			}
			for i, w := range order {
				passedOver := 0
				for _, before := range order[:i] {
					if before > w {
						passedOver++
					}
				}
				if passedOver > 1 {
					t.Fatalf("waiters served in the order %v after the expiry: waiter %d passed over by %d that came after it; want the order they came in", order, w, passedOver)
				}
			}
		})
	}
}
