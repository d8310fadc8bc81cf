package otelhook_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/hooks/otelhook"
	"github.com/lockkit/lock/stores/memory"
)

// cancelAt is a lock.SpanHook that passes everything to the otelhook, and
// ends the call's context when it is told of the event at returns true
// for: as if the caller gave up at that moment.
type cancelAt struct {
	*otelhook.Hook
	at     func(lock.Event) bool
	cancel context.CancelFunc
}

func (c cancelAt) Observe(ctx context.Context, e lock.Event) {
	if c.at(e) {
		c.cancel()
	}
	c.Hook.Observe(ctx, e)
}

// An attempt that found the resource held counts in lock.contention
// once, also when the caller's context ends during that attempt (the
// call then fails with the context's error, without a retry), or during
// the pause after it.
func TestContentionCountedWhenContextEnds(t *testing.T) {
	refusedBy := func(kind lock.EventKind) func(lock.Event) bool {
		return func(e lock.Event) bool { return e.Kind == kind && errors.Is(e.Err, lock.ErrNotAcquired) }
	}
	for _, tc := range []struct {
		name   string
		stores int
		at     func(lock.Event) bool
	}{
		{"single store, during the attempt", 1, refusedBy(lock.EventStoreCall)},
		{"single store, during the pause", 1, refusedBy(lock.EventRetry)},
		{"three stores, during the attempt", 3, refusedBy(lock.EventQuorum)},
		{"three stores, during the pause", 3, refusedBy(lock.EventRetry)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var stores []lock.Store
			for range tc.stores {
				stores = append(stores, memory.New())
			}
			holder, err := newLocker(stores, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := holder.TryLock(context.Background(), "r", time.Minute); err != nil {
				t.Fatalf("holder's TryLock(r) = %v; want nil", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l, err := newLocker(stores, &lock.Options{Hook: cancelAt{f.hook, tc.at, cancel}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Lock(ctx, "r", time.Minute); !errors.Is(err, context.Canceled) {
				t.Fatalf("Lock(r) = %v; want context.Canceled", err)
			}
			if got := f.sums(t)["lock.contention"]; got != 1 {
				t.Errorf("lock.contention = %d after one attempt that found r held; want 1", got)
			}
		})
	}
}

// newLocker returns a SingleLocker over one store, a MultiLocker over
// more.
func newLocker(stores []lock.Store, opts *lock.Options) (lock.Locker, error) {
	if len(stores) == 1 {
		return lock.NewSingle(stores[0], opts)
	}
	return lock.NewMulti(stores, opts)
}
