package lock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// The locker's hook sees a semaphore's releases and extensions under the
// resource's name, as NewSemaphore says, built from plain locks too (where
// the calls on the slots are seen under their derived names).
func TestSemaphoreHookSeesReleaseAndExtendUnderResource(t *testing.T) {
	for _, s := range semSetups {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mems, _ := s.stores()
				h := &kindsHook{}
				var l lock.Locker
				if len(mems) == 1 {
					l = mustSingle(t, mems[0], &lock.Options{Hook: h})
					if s.name != "native" {
						l = mustSingle(t, withoutStart{mems[0], mems[0], mems[0], mems[0], mems[0]}, &lock.Options{Hook: h})
					}
				} else {
					ls := make([]lock.Store, len(mems))
					for i, m := range mems {
						ls[i] = m
					}
					l = mustMulti(t, ls, &lock.Options{Hook: h})
				}
				sem := mustSemaphore(t, l, 2)
				p, err := sem.TryLock(t.Context(), "jobs", time.Minute)
				wantNil(t, "TryLock(jobs)", err)
				p, err = sem.Extend(t.Context(), p, time.Minute)
				wantNil(t, "Extend(permit)", err)
				wantNil(t, "Unlock(permit)", sem.Unlock(t.Context(), p))
				for _, want := range []string{"acquired jobs ok", "extended jobs ok", "released jobs ok"} {
					if !h.saw(want) {
						t.Errorf("the hook did not see %q; saw %q", want, h.seen)
					}
				}
			})
		})
	}
}

// An Extend of a permit whose outcome is unknown (the store extended it,
// the reply was lost) may have lengthened it in the stores: the
// semaphore's UnlockAll still releases it once the TTL it had before has
// passed, as a plain locker's does, however the semaphore was built.
func TestSemaphoreUnlockAllAfterAnExtendOfUnknownOutcome(t *testing.T) {
	for _, s := range semSetups {
		if s.name == "slots-basic" { // cannot extend
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mems, newLocker := s.stores()
				sem := mustSemaphore(t, newLocker(t), 2)
				p, err := sem.TryLock(t.Context(), "r", 10*time.Second)
				wantNil(t, "TryLock(r)", err)
				for _, m := range mems {
					m.Inject(memory.Fault{Ops: memory.OpExtend, Err: errConnReset, AfterApply: true})
				}
				if _, err := sem.Extend(t.Context(), p, time.Hour); err == nil {
					t.Fatalf("Extend(permit) with its replies lost = nil; want an error")
				}
				for _, m := range mems {
					m.ClearFaults()
				}
				time.Sleep(time.Minute) // the permit's first TTL is long past; the hour is not
				wantNil(t, "UnlockAll", sem.UnlockAll(t.Context()))
				noPermits(t, mems, "r")
			})
		})
	}
}

// The same for each side of a read-write lock: its UnlockAll releases a
// reader's permit, or a writer's intent, whose extension's outcome is
// unknown.
func TestRWLockerUnlockAllAfterAnExtendOfUnknownOutcome(t *testing.T) {
	for _, s := range semSetups {
		if s.name == "slots-basic" {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mems, newLocker := s.stores()
				rw, err := lock.NewRWLocker(newLocker(t))
				wantNil(t, "NewRWLocker", err)
				for _, side := range []struct {
					name string
					l    lock.Locker
				}{{"reader", rw.Reader()}, {"writer", rw.Writer()}} {
					w, err := side.l.TryLock(t.Context(), "r", 10*time.Second)
					wantNil(t, side.name+": TryLock(r)", err)
					for _, m := range mems {
						m.Inject(memory.Fault{Ops: memory.OpExtend, Err: errConnReset, AfterApply: true})
					}
					if _, err := side.l.Extend(t.Context(), w, time.Hour); err == nil {
						t.Fatalf("%s: Extend with its replies lost = nil; want an error", side.name)
					}
					for _, m := range mems {
						m.ClearFaults()
					}
					time.Sleep(time.Minute)
					wantNil(t, side.name+": UnlockAll", side.l.UnlockAll(t.Context()))
					if held, err := side.l.IsLocked(t.Context(), "r"); err != nil || held {
						t.Errorf("%s: IsLocked(r) after UnlockAll = %v, %v; want false, nil", side.name, held, err)
					}
				}
				noPermits(t, mems, "r~read")
			})
		})
	}
}
