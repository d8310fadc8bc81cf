package lock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A Redlock's Lock whose refusing stores notify releases only in part
// waits for a release no longer than its retry delay, as a poll would:
// waiting as long as the TTL on the stores that can notify, it missed
// the release on those that cannot, and kept waiting for a lock long
// free (here on a store holding a stale copy for 30s, it never woke).
func TestMultiLockWaitsTheDelayWhenNotEveryRefusalNotifies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m0 := memory.New(memory.WithName("m0")) // the one store that notifies
		stores := []lock.Store{m0, basic{memory.New()}, basic{memory.New()}}
		wantNil(t, "m0.Acquire(r, stale)", m0.Acquire(ctx, "r", "stale", 30*time.Second)) // a copy left by a failed attempt
		a := mustMulti(t, stores, nil)
		held, err := a.TryLock(ctx, "r", time.Minute)
		wantNil(t, "a.TryLock(r) on the two other stores", err)
		go func() {
			time.Sleep(200 * time.Millisecond)
			wantNil(t, "a.Unlock(r)", a.Unlock(ctx, held))
		}()
		b := mustMulti(t, stores, nil)
		lctx, cancel := context.WithTimeout(ctx, 8*time.Second)
		defer cancel()
		start := time.Now()
		l, err := b.Lock(lctx, "r", 10*time.Second)
		if err != nil {
			t.Fatalf("b.Lock(r), a's lock released after 200ms = %v after %v; want the lock within its retry delay of the release", err, time.Since(start))
		}
		wantNil(t, "b.Unlock(r)", b.Unlock(ctx, l))
	})
}
