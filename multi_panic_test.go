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

// panicStarter is a memory store whose Start panics on releases while
// panics is set: a store that starts calls on the caller's goroutine and
// panics there.
type panicStarter struct {
	*memory.Store
	panics *atomic.Bool
}

func (p panicStarter) Start(ctx context.Context, c lock.Call, done func(uint64, error)) {
	if c.Op == lock.CallRelease && p.panics.Load() {
		panic("store panics in Release")
	}
	p.Store.Start(ctx, c, done)
}

// A store that panics in an Unlock does not leave the lock's turn taken:
// once the panic has been recovered, the next Unlock of the lock runs
// instead of waiting for the first to end.
func TestMultiUnlockAfterPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		var panics atomic.Bool
		var stores []lock.Store
		for range 3 {
			stores = append(stores, panicStarter{memory.New(), &panics})
		}
		l := mustMulti(t, stores, nil)
		held, err := l.TryLock(ctx, "res", time.Minute)
		if err != nil {
			t.Fatalf("TryLock = %v; want nil", err)
		}
		panics.Store(true)
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("Unlock with a panicking store returned; want its panic")
				}
			}()
			_ = l.Unlock(ctx, held)
		}()
		panics.Store(false)
		uctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := l.Unlock(uctx, held); err != nil {
			t.Fatalf("Unlock after a recovered panic = %v; want nil", err)
		}
	})
}
