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

// A Shutdown whose context has ended releases every lock all the same,
// each release bounded by the store timeout, as Shutdown says: the
// releases shared one store timeout, so that over a slow store only the
// first were made in time and the others left their locks held.
func TestSingleShutdownEndedContextBoundsEachRelease(t *testing.T) {
	for _, local := range []bool{true, false} {
		name := "memory"
		if !local {
			name = "wrapped"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := memory.New()
				var s lock.Store = m
				if !local {
					s = withoutStart{m, m, m, m, m} // no in-process bookkeeping
				}
				l := mustSingle(t, s, &lock.Options{StoreTimeout: 50 * time.Millisecond})
				for _, r := range []string{"a", "b", "c", "d"} {
					_, err := l.TryLock(t.Context(), r, time.Hour)
					wantNil(t, "TryLock("+r+")", err)
				}
				m.Inject(memory.Fault{Ops: memory.OpRelease, Delay: 30 * time.Millisecond, Times: memory.Always})
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				err := l.Shutdown(ctx)
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Shutdown(ended context) = %v; want context.Canceled", err)
				}
				m.ClearFaults()
				noResidue(t, m)
			})
		})
	}
}
