package lock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// An Extend whose outcome is unknown (a lost reply, a store answering
// past the new validity or after the store timeout) may have extended the
// lock in the stores: the locker still counts it among the locks it holds
// for as long as the stores may keep it, so that UnlockAll releases it
// after the old validity has run out, as "every lock this locker acquired
// and still holds" says.
func TestContractUnlockAllAfterUndecidedExtend(t *testing.T) {
	lostReply := memory.Fault{Ops: memory.OpExtend, Err: errConnReset, AfterApply: true}
	for _, c := range []struct {
		name  string
		multi bool
		fault memory.Fault
		ttl   time.Duration // of the Extend
	}{
		{"single/lost reply", false, lostReply, time.Hour},
		// A reply after 20s to an Extend for 20s, which the store
		// applied then: past its validity.
		{"single/late reply", false, memory.Fault{Ops: memory.OpExtend, Delay: 20 * time.Second}, 20 * time.Second},
		{"multi/lost replies", true, lostReply, time.Hour},
		// Extensions that land after the store timeout.
		{"multi/late extensions", true, memory.Fault{Ops: memory.OpExtend, Delay: time.Second, InFlight: true}, time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				ms, ls := memStores(3)
				for i, m := range ms {
					ls[i] = withoutStart{m, m, m, m, m} // a store outside the process
				}
				var l lock.Locker
				if c.multi {
					l = mustMulti(t, ls, nil)
				} else {
					l, ms = mustSingle(t, ls[0], nil), ms[:1]
				}
				start := time.Now()
				k, err := l.TryLock(ctx, "r", time.Minute)
				wantNil(t, "TryLock(r, 1m)", err)
				time.Sleep(30 * time.Second)
				for _, m := range ms {
					m.Inject(c.fault)
				}
				_, err = l.Extend(ctx, k, c.ttl)
				wantIs(t, "Extend(r) with "+c.name, err, lock.ErrUnavailable)
				// Past the lock's first TTL (and its record's margin),
				// within the new one.
				time.Sleep(time.Minute + 5*time.Second - time.Since(start))
				if ok, _ := l.IsLocked(ctx, "r"); !ok {
					t.Fatalf("IsLocked(r) after the Extend = false; want true (the stores extended it)")
				}
				wantNil(t, "UnlockAll()", l.UnlockAll(ctx))
				if ok, err := l.IsLocked(ctx, "r"); ok || err != nil {
					t.Errorf("IsLocked(r) after UnlockAll() = %v, %v; want false, nil: the locker acquired it and the stores still held it", ok, err)
				}
				noResidue(t, ms...)
			})
		})
	}
}

// A MultiLocker's Extend that finds the lock gone from a quorum of stores
// reports ErrNotHeld and leaves no store holding it: the stores that
// still had it (and extended it) release it, rather than keep, for the
// new TTL, a lock nobody holds — which IsLocked reports held and which
// would cost its next holder a store.
func TestContractMultiExtendNotHeldLeavesNothing(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(3)
			l := mustMulti(t, ls, nil)
			k, err := l.TryLock(ctx, "r", time.Minute)
			wantNil(t, "TryLock(r)", err)
			synctest.Wait() // every store took it
			ms[1].Expire("r")
			ms[2].Expire("r")
			_, err = l.Extend(ctx, k, time.Hour)
			wantIs(t, "Extend(r) gone from m1 and m2", err, lock.ErrNotHeld)
			synctest.Wait()
			if ok, err := l.IsLocked(ctx, "r"); ok || err != nil {
				t.Errorf("IsLocked(r) after Extend(r) = ErrNotHeld: %v, %v; want false, nil", ok, err)
			}
			noResidue(t, ms...)
		})
	})
}

// After Shutdown, Unlock keeps working: a lock handed over by another
// locker (which Shutdown leaves to its acquirer) is released by it.
func TestContractUnlockWorksAfterShutdown(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "multi"}[multi], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				ms, ls := memStores(3)
				mk := func() lock.Locker { return mustSingle(t, ls[0], nil) }
				if multi {
					mk = func() lock.Locker { return mustMulti(t, ls, nil) }
				} else {
					ms = ms[:1]
				}
				acquirer, closed := mk(), mk()
				k, err := acquirer.TryLock(ctx, "r", time.Minute)
				wantNil(t, "acquirer.TryLock(r)", err)
				synctest.Wait()
				wantNil(t, "closed.Shutdown()", closed.Shutdown(ctx))
				if ok, _ := closed.IsLocked(ctx, "r"); !ok {
					t.Fatalf("IsLocked(r) after another locker's Shutdown = false; want true: the lock is its acquirer's")
				}
				wantNil(t, "closed.Unlock(r) after Shutdown", closed.Unlock(ctx, k))
				noResidue(t, ms...)
			})
		})
	}
}
