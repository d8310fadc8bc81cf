package lock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
)

// Unlock with a context that has ended returns the context's error. A
// SingleLocker leaves the lock held, to an Unlock with a live context or
// its TTL; a MultiLocker releases it in the background, as it does on
// stores that failed. Both then accept an Unlock with a live context.
func TestUnlockCanceledContext(t *testing.T) {
	for _, multi := range []bool{false, true} {
		name := "single"
		if multi {
			name = "multi"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ms, ls := memStores(3)
				var l lock.Locker = mustSingle(t, ls[0], nil)
				if multi {
					l = mustMulti(t, ls, nil)
				} else {
					ms = ms[:1]
				}
				held, err := l.TryLock(t.Context(), "r", time.Minute)
				wantNil(t, "TryLock()", err)
				canceled, cancel := context.WithCancel(t.Context())
				cancel()
				wantIs(t, "Unlock() with a canceled context", l.Unlock(canceled, held), context.Canceled)
				time.Sleep(time.Second) // a background release has had its chance
				for i, m := range ms {
					ok, err := m.Exists(t.Context(), "r")
					if err != nil || ok == multi {
						t.Errorf("store %d: Exists(r) a second after the canceled Unlock = %v, %v; want %v", i, ok, err, !multi)
					}
				}
				wantNil(t, "Unlock() with a live context", l.Unlock(t.Context(), held))
				noResidue(t, ms...)
			})
		})
	}
}
