package lock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A lock granted before every store answered is unlocked (or extended)
// only after the slow stores have answered: a release sent earlier could
// overtake the slow store's acquire, find nothing, and leave that store
// holding a copy of the lock until it expires.
func TestMultiUnlockWaitsForSlowAcquire(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		for _, then := range []string{"Unlock", "Extend then Unlock"} {
			t.Run(then, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ms, ls := memStores(3)
					ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 20 * time.Millisecond})
					l := mustMulti(t, ls, &lock.Options{StoreTimeout: time.Second})
					start := time.Now()
					held, err := l.TryLock(t.Context(), "res", time.Minute)
					wantNil(t, "TryLock(res)", err)
					if d := time.Since(start); d != 0 {
						t.Fatalf("TryLock returned after %v; want at once, with two stores of three", d)
					}
					if then == "Extend then Unlock" {
						held, err = l.Extend(t.Context(), held, time.Minute)
						wantNil(t, "Extend(res) while the slow store's acquire is on its way", err)
						if d := time.Since(start); d != 20*time.Millisecond {
							t.Errorf("Extend returned after %v; want 20ms, once the slow store answered", d)
						}
					}
					wantNil(t, "Unlock(res) while the slow store's acquire is on its way", l.Unlock(t.Context(), held))
					time.Sleep(time.Second) // fake time: long past every store's answer
					noResidue(t, ms...)
				})
			})
		}
	})
}

// Unlock releases at once on the stores that answered the acquisition,
// returns once a quorum released it, and releases a slow store once it
// has answered.
func TestMultiUnlockReleasesStoreByStore(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ms, ls := memStores(3)
			ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 20 * time.Millisecond})
			l := mustMulti(t, ls, &lock.Options{StoreTimeout: time.Second})
			held, err := l.TryLock(t.Context(), "res", time.Minute)
			wantNil(t, "TryLock(res)", err)
			start := time.Now()
			wantNil(t, "Unlock(res)", l.Unlock(t.Context(), held))
			if d := time.Since(start); d != 0 {
				t.Errorf("Unlock returned after %v; want at once: two stores of three released it", d)
			}
			noResidue(t, ms[0], ms[1])
			if got := ms[2].Resources(); len(got) != 0 {
				t.Fatalf("%s holds %q before its acquisition landed", ms[2], got)
			}
			time.Sleep(20 * time.Millisecond) // the slow store answers, and is released
			synctest.Wait()
			noResidue(t, ms...)
		})
	})
}
