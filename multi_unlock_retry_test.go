package lock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/quorum"
	"github.com/lockkit/lock/stores/memory"
)

// An Unlock retried after ErrUnavailable (a store failed its release, and
// the quorum needs it) succeeds once the retry released the lock on the
// stores left: the stores the first call released count as released, not
// as stores that no longer held the lock. So it does when the background
// retry released the failed store first.
func TestMultiUnlockRetriedAfterUnavailable(t *testing.T) {
	for _, background := range []bool{false, true} {
		name := "retry releases"
		if background {
			name = "background released first"
		}
		t.Run(name, func(t *testing.T) {
			eachPath(t, func(t *testing.T, memStores storesFunc) {
				synctest.Test(t, func(t *testing.T) {
					ctx := t.Context()
					ms, ls := memStores(3)
					l := mustMulti(t, ls, &lock.Options{Quorum: quorum.Unanimous{}})
					held, err := l.TryLock(ctx, "res", time.Minute)
					wantNil(t, "TryLock(res)", err)
					ms[2].Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, Times: memory.Always})
					wantIs(t, "Unlock(res) unanimous with a store failing its releases", l.Unlock(ctx, held), lock.ErrUnavailable)
					ms[2].ClearFaults()
					if background {
						time.Sleep(time.Second) // fake time: the background retries
					}
					wantNil(t, "Unlock(res) again once the store answers", l.Unlock(ctx, held))
					noResidue(t, ms...)
				})
			})
		})
	}
}
