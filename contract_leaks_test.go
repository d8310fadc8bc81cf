package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/stores/memory"
)

// No locker goroutine outlives its calls, on real time: contended Lock
// calls that wait, a Run ended by Shutdown, and a MultiLocker whose stores
// answer late (each call in a goroutine of its own) all leave nothing
// running once the stores have answered. (Under testing/synctest a leak
// would deadlock the bubble; this checks the real scheduler's paths.)
func TestNoGoroutineLeft(t *testing.T) {
	before := faultkit.Goroutines()
	ctx := context.Background()
	ms, ls := memStores(3)
	for i, m := range ms {
		ls[i] = withoutStart{m, m, m, m, m}
	}
	ms[2].Inject(memory.Fault{Ops: memory.OpAcquire | memory.OpExtend | memory.OpRelease, Delay: 20 * time.Millisecond, Times: memory.Always})
	single := mustSingle(t, ms[0], nil)
	multi := mustMulti(t, ls, &lock.Options{StoreTimeout: 10 * time.Millisecond})
	for _, l := range []lock.Locker{single, multi} {
		held, err := l.TryLock(ctx, "contended", time.Minute)
		wantNil(t, "TryLock(contended)", err)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
				defer cancel()
				if _, err := l.Lock(wctx, "contended", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Lock(contended) = %v; want DeadlineExceeded", err)
				}
			}()
		}
		wg.Wait()
		wantNil(t, "Unlock(contended)", l.Unlock(ctx, held))
		started := make(chan struct{})
		ran := make(chan error, 1)
		go func() {
			ran <- lock.Run(ctx, l, "run", time.Minute, func(ctx context.Context, _ lock.Lock) error {
				close(started)
				<-ctx.Done()
				return nil
			})
		}()
		<-started
		if err := l.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown() = %v; want nil", err)
		}
		wantIs(t, "Run() ended by Shutdown", <-ran, lock.ErrLost)
	}
	if leaked := before.Leaked(5 * time.Second); len(leaked) > 0 {
		t.Errorf("%d goroutines left after the lockers' calls returned; want none:\n%s", len(leaked), leaked[0])
	}
}
