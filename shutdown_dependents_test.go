package lock_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Shutdown waits one store timeout at most for the calls under way, on
// the locker and on the native semaphores built on it together (an
// RWLocker's readers are one): it waited one store timeout for each.
func TestShutdownWaitsOneStoreTimeoutWithDependents(t *testing.T) {
	for _, n := range []int{1, 5} {
		t.Run(fmt.Sprint(n, " semaphores"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				m := memory.New()
				const storeTimeout = 100 * time.Millisecond
				base := mustSingle(t, m, &lock.Options{StoreTimeout: storeTimeout})
				m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour, Times: memory.Always})
				done := make(chan error, n+1)
				go func() { _, err := base.TryLock(ctx, "b", time.Minute); done <- err }()
				for i := range n {
					sem := mustSemaphore(t, base, 2)
					go func() { _, err := sem.TryLock(ctx, fmt.Sprint("s", i), time.Minute); done <- err }()
				}
				synctest.Wait() // every call waits for the store
				start := time.Now()
				err := base.Shutdown(ctx)
				if took := time.Since(start); took > storeTimeout {
					t.Errorf("Shutdown() = %v after %v, with a call under way on the locker and on each of %d semaphores; want at most one store timeout (%v)", err, took, n, storeTimeout)
				}
				m.ClearFaults()
				for range n + 1 {
					<-done
				}
			})
		})
	}
}
