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

// An Unlock whose releases all applied but whose replies were lost
// reports ErrUnavailable; retried, it succeeds: every store finds
// nothing, and a store whose release failed and which finds nothing
// counts as released. It reported ErrNotHeld, "expired or taken over",
// for a lock held until its own first release.
func TestMultiUnlockRetriedAfterLostReplies(t *testing.T) {
	for _, wait := range []time.Duration{0, time.Second} {
		t.Run("retried after "+wait.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				ms := []*memory.Store{memory.New(), memory.New(), memory.New()}
				l := mustMulti(t, []lock.Store{withoutStart{ms[0], ms[0], ms[0], ms[0], ms[0]}, withoutStart{ms[1], ms[1], ms[1], ms[1], ms[1]}, withoutStart{ms[2], ms[2], ms[2], ms[2], ms[2]}}, nil)
				held, err := l.TryLock(ctx, "res", time.Minute)
				wantNil(t, "TryLock(res)", err)
				for _, m := range ms { // every try releases, and its reply is lost
					m.Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, AfterApply: true, Times: 4})
				}
				wantIs(t, "Unlock(res) whose replies were lost", l.Unlock(ctx, held), lock.ErrUnavailable)
				time.Sleep(wait) // fake time: the background asks again
				wantNil(t, "Unlock(res) retried", l.Unlock(ctx, held))
				noResidue(t, ms...)
			})
		})
	}
}
