package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// ctxCalls records, for every store call told to the hook with a context
// error, whether the context it was observed in had ended: the hook tells
// a call its context ended from a store's failure by that alone.
type ctxCalls struct {
	mu   sync.Mutex
	live []string // store ops failed with a context error in a live context
	seen int      // store calls failed with a context error
}

func (c *ctxCalls) Observe(ctx context.Context, e lock.Event) {
	if e.Kind != lock.EventStoreCall || !errors.Is(e.Err, context.Canceled) && !errors.Is(e.Err, context.DeadlineExceeded) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen++
	if ctx.Err() == nil {
		c.live = append(c.live, e.Store+" "+e.StoreOp+": "+e.Err.Error())
	}
}

func (c *ctxCalls) check(t *testing.T, what string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == 0 {
		t.Fatalf("%s: no store call ended by its context; want some", what)
	}
	if len(c.live) > 0 {
		t.Errorf("%s: store calls ended by the locker's own context told to the hook in a live context, as store failures: %q; want them told in the ended context", what, c.live)
	}
}

// A MultiLocker's Lock woken by one store's release ends its waits on the
// others: the hook hears of those in their ended context.
func TestHookMultiWaitsEndedByAWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ms := []*memory.Store{memory.New(memory.WithName("m0")), memory.New(memory.WithName("m1")), memory.New(memory.WithName("m2"))}
		stores := []lock.Store{ms[0], ms[1], ms[2]}
		holder := mustMulti(t, stores, nil)
		calls := &ctxCalls{}
		waiter := mustMulti(t, stores, &lock.Options{Hook: calls})
		held, err := holder.TryLock(ctx, "r", time.Minute)
		wantNil(t, "holder.TryLock(r)", err)
		go func() {
			time.Sleep(100 * time.Millisecond)
			for _, m := range ms[1:] { // m1 and m2 release a moment after m0
				m.Inject(memory.Fault{Ops: memory.OpRelease, Delay: 30 * time.Millisecond})
			}
			wantNil(t, "holder.Unlock(r)", holder.Unlock(ctx, held))
		}()
		l, err := waiter.Lock(ctx, "r", time.Minute)
		wantNil(t, "waiter.Lock(r)", err)
		wantNil(t, "waiter.Unlock(r)", waiter.Unlock(ctx, l))
		calls.check(t, "Lock woken by m0's release")
	})
}

// A Lock waiting in a store's line that Shutdown ends: the hook hears of
// the store call in the context Shutdown ended.
func TestHookQueuedWaitEndedByShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := &lineStore{Store: memory.New()}
		holder := mustSingle(t, s, nil)
		calls := &ctxCalls{}
		waiter := mustSingle(t, s, &lock.Options{Hook: calls})
		held, err := holder.TryLock(ctx, "r", time.Minute)
		wantNil(t, "holder.TryLock(r)", err)
		done := make(chan error, 1)
		go func() {
			_, err := waiter.Lock(ctx, "r", time.Minute)
			done <- err
		}()
		synctest.Wait() // in line
		wantNil(t, "waiter.Shutdown()", waiter.Shutdown(ctx))
		wantIs(t, "waiter.Lock(r) in line when Shutdown began", <-done, lock.ErrClosed)
		wantNil(t, "holder.Unlock(r)", holder.Unlock(ctx, held))
		calls.check(t, "Lock in line ended by Shutdown")
	})
}
