package lock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A MultiLocker's attempt with a majority of its stores dead fails after
// one store timeout, as Options.StoreTimeout promises ("a dead store
// costs at most this much"): it does not wait for the releases it sends
// the stores that did not answer in time (they go on in the background),
// which cost another store timeout. The live store is released before
// TryLock returns.
func TestMultiAttemptWithDeadMajorityTakesOneStoreTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const storeTimeout = 100 * time.Millisecond
		live := memory.New()
		stores := []lock.Store{live}
		for range 2 {
			dead := memory.New()
			dead.Inject(memory.Fault{Delay: time.Hour, Times: memory.Always})
			stores = append(stores, dead)
		}
		l, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: storeTimeout})
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range []struct {
			name string
			do   func(ctx context.Context) error
		}{
			{"TryLock", func(ctx context.Context) error { _, err := l.TryLock(ctx, "r", time.Second); return err }},
			{"Lock(NoRetry)", func(ctx context.Context) error {
				_, err := l.Lock(ctx, "r", time.Second, lock.WithRetry(lock.NoRetry))
				return err
			}},
		} {
			start := time.Now()
			err := call.do(t.Context())
			if took := time.Since(start); !errors.Is(err, lock.ErrUnavailable) || took != storeTimeout {
				t.Errorf("%s with 2 of 3 stores dead = %v after %v; want ErrUnavailable after one store timeout (%v)", call.name, err, took, storeTimeout)
			}
			if got := live.Resources(); len(got) != 0 {
				t.Errorf("%s failed, leaving %q held on the live store; want it released", call.name, got)
			}
		}
		time.Sleep(time.Minute) // the background releases on the dead stores give up
	})
}
