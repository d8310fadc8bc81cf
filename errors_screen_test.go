package lock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A locker's error matches the package's outcome sentinels and the
// context errors through its overall cause only: a store's failure in the
// chain that wraps one of them (a client's own timeout, a store's
// "recovering" error wrapping ErrUnavailable, its client closed) does not
// make the call's error read as another outcome.
func TestErrorChainMatchesTheOutcomeOnly(t *testing.T) {
	ctx := context.Background()
	clientTimeout := fmt.Errorf("client: read timed out: %w", context.DeadlineExceeded)
	recovering := fmt.Errorf("store: recovering: %w", lock.ErrUnavailable)
	clientClosed := fmt.Errorf("store: client closed: %w", lock.ErrClosed)

	t.Run("single", func(t *testing.T) {
		for _, storeErr := range []error{clientTimeout, clientClosed} {
			s := memory.New()
			l := mustSingle(t, s, nil)
			s.Inject(memory.Fault{Ops: memory.OpAcquire, Err: storeErr})
			_, err := l.TryLock(ctx, "r", time.Minute)
			wantIs(t, fmt.Sprintf("TryLock(r) with the store failing with %q", storeErr), err, lock.ErrUnavailable)
			for _, not := range []error{context.DeadlineExceeded, lock.ErrClosed} {
				if errors.Is(err, not) {
					t.Errorf("TryLock(r) with the store failing with %q = %v, matching %v; want ErrUnavailable only: the caller's context is alive and the locker is not shut down", storeErr, err, not)
				}
			}
			if !errors.Is(err, storeErr) {
				t.Errorf("TryLock(r) = %v; want the store's error %q in the chain", err, storeErr)
			}
		}
	})

	t.Run("multi", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem, stores := memStores(3)
			other := mustMulti(t, stores[:2:2], &lock.Options{Quorum: allOf{}})
			if _, err := other.TryLock(ctx, "r", time.Minute); err != nil {
				t.Fatalf("other.TryLock(r) on stores 0 and 1 = %v", err)
			}
			// Store 2 fails at once; stores 0 and 1 refuse a moment later, so
			// that the failure is among the answers when the outcome is known.
			mem[2].Inject(memory.Fault{Err: recovering})
			for _, m := range mem[:2] {
				m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Millisecond})
			}
			l := mustMulti(t, stores, nil)
			_, err := l.TryLock(ctx, "r", time.Minute)
			wantIs(t, "TryLock(r) with two stores held by another and one failing", err, lock.ErrNotAcquired)
			if errors.Is(err, lock.ErrUnavailable) {
				t.Errorf("TryLock(r) with two stores held by another and one failing = %v, matching ErrUnavailable; want ErrNotAcquired only", err)
			}
			if !errors.Is(err, recovering) {
				t.Errorf("TryLock(r) = %v; want the failing store's error in the chain", err)
			}
			var se lock.StoreError
			if !errors.As(err, &se) || se.Index != 2 {
				t.Errorf("errors.As(TryLock(r) error, *StoreError) = %v, %+v; want store 2's error", errors.As(err, &se), se)
			}
		})
	})
}

// allOf is a quorum of every store.
type allOf struct{}

func (allOf) Met(granted, n int) bool { return granted == n }
func (allOf) String() string          { return "all" }
