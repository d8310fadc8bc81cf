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

// A minority of stores that cannot extend costs no extension: a quorum
// of the others extends the lock. When one of those fails once, the
// extension fails with ErrUnavailable, which must not read as "this
// locker cannot extend" (errors.ErrUnsupported): Run would then stop
// extending, and lose a lock that its next extension would have kept.
func TestMultiExtendMinorityWithoutExtender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ms, ls := memStores(3)
		ls[0] = basic{ms[0]} // cannot extend
		l := mustMulti(t, ls, nil)
		held, err := l.TryLock(ctx, "res", time.Second)
		wantNil(t, "TryLock(res)", err)
		ms[1].Inject(memory.Fault{Ops: memory.OpExtend, Err: errConnReset})
		_, err = l.Extend(ctx, held, time.Second)
		wantIs(t, "Extend(res) with one store unable to extend and one failing", err, lock.ErrUnavailable)
		if errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("Extend(res) with 2 of 3 stores able to extend, one failing once = %v; want no errors.ErrUnsupported: a retry can succeed", err)
		}
		held, err = l.Extend(ctx, held, time.Second)
		wantNil(t, "Extend(res) with 2 of 3 stores able to extend", err)
		wantNil(t, "Unlock(res)", l.Unlock(ctx, held))
		noResidue(t, ms...)
	})
}

// Run keeps a lock through one failed extension when a quorum of the
// stores can extend, even if one store cannot.
func TestMultiRunSurvivesAFailedExtensionWithAStoreUnableToExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms, ls := memStores(3)
		ls[0] = basic{ms[0]} // cannot extend
		l := mustMulti(t, ls, nil)
		ms[1].Inject(memory.Fault{Ops: memory.OpExtend, Err: errConnReset})
		err := lock.Run(t.Context(), l, "job", time.Second, func(ctx context.Context, _ lock.Lock) error {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(3 * time.Second):
				return nil
			}
		})
		wantNil(t, "Run(job) for 3 TTLs, one extension failing once, 2 of 3 stores able to extend", err)
		noResidue(t, ms...)
	})
}

// With fewer than a quorum of stores able to extend, Extend reports
// errors.ErrUnsupported, as a SingleLocker does, before it sends anything:
// extending the lock on a minority would only keep it there longer.
func TestMultiExtendWithoutAQuorumOfExtenders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		c := newCounting("c")
		ms, _ := memStores(2)
		l := mustMulti(t, []lock.Store{basic{ms[0]}, basic{ms[1]}, c}, nil)
		held, err := l.TryLock(ctx, "res", time.Second)
		wantNil(t, "TryLock(res)", err)
		synctest.Wait()
		before := c.calls.Load()
		_, err = l.Extend(ctx, held, time.Minute)
		wantIs(t, "Extend(res) with 1 of 3 stores able to extend", err, errors.ErrUnsupported)
		if errors.Is(err, lock.ErrUnavailable) {
			t.Errorf("Extend(res) with 1 of 3 stores able to extend = %v; want no ErrUnavailable: no store failed, retrying does not help", err)
		}
		if n := c.calls.Load() - before; n != 0 {
			t.Errorf("Extend(res) with 1 of 3 stores able to extend made %d store calls; want none", n)
		}
		wantNil(t, "Unlock(res)", l.Unlock(ctx, held))
	})
}

// An Unlock whose context ends while it waits for background work under
// way returns the context's error, and the lock is released in the
// background, as the doc of Unlock says.
func TestMultiUnlockCanceledDuringBackfillReleasesLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms, ls := memStores(3)
		ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})            // fails in the attempt
		ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 30 * time.Millisecond}) // its background retry is slow
		l := mustMulti(t, ls, &lock.Options{StoreTimeout: 40 * time.Millisecond})
		held, err := l.TryLock(t.Context(), "res", time.Minute)
		wantNil(t, "TryLock(res)", err)
		time.Sleep(50 * time.Millisecond) // the background retry is under way
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		defer cancel()
		wantIs(t, "Unlock(res) whose context ends during a background retry", l.Unlock(ctx, held), context.DeadlineExceeded)
		time.Sleep(time.Second) // fake time: the background releases
		noResidue(t, ms...)
	})
}

// An attempt whose quorum granted the lock but could not raise the
// stores' fences to the lock's fails with ErrUnavailable, and the stores'
// own errors are part of the chain, naming the stores, as for any store
// failure.
func TestMultiUnfencedNamesTheStoresThatFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ms, ls := memStores(3)
		wantNil(t, "RaiseFence(m0)", ms[0].RaiseFence(ctx, "res", 100))
		for _, m := range ms[1:] {
			m.Inject(memory.Fault{Ops: memory.OpRaiseFence, Err: errConnReset, Times: memory.Always})
		}
		l := mustMulti(t, ls, nil)
		_, err := l.TryLock(ctx, "res", time.Second)
		wantIs(t, "TryLock(res) with 2 of 3 stores failing their raises", err, lock.ErrUnavailable)
		wantIs(t, "TryLock(res) with 2 of 3 stores failing their raises", err, errConnReset)
		var le *lock.Error
		if !errors.As(err, &le) || len(le.Stores) != 2 {
			t.Errorf("TryLock(res) with 2 of 3 stores failing their raises = %v; want the two stores named", err)
		}
		synctest.Wait()
		noResidue(t, ms...)
	})
}

// An Extend that re-took the lock on a store that had refused the attempt
// but finished past the new validity (ErrUnavailable) leaves that store
// holding the lock: Unlock releases it there too.
func TestMultiUnlockAfterLateExtendReleasesRepairedStores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ms, ls := memStores(3)
		competitor := holdElsewhere(t, ms[2], "r", time.Hour)
		l := mustMulti(t, ls, &lock.Options{StoreTimeout: time.Second})
		// Too short a lock for the background to ask store 2 again a
		// store timeout later.
		held, err := l.TryLock(ctx, "r", 1500*time.Millisecond)
		wantNil(t, "TryLock(r) with a store held by a competitor", err)
		time.Sleep(1200 * time.Millisecond)
		wantNil(t, "competitor's release", ms[2].Release(ctx, "r", competitor.Token))
		for _, m := range ms[:2] {
			m.Inject(memory.Fault{Ops: memory.OpExtend, Delay: 60 * time.Millisecond})
		}
		ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 60 * time.Millisecond})
		_, err = l.Extend(ctx, held, 100*time.Millisecond)
		wantIs(t, "Extend(r) for 100ms taking 120ms", err, lock.ErrUnavailable)
		if got := holds(t, ms, "r"); !all(got) {
			t.Fatalf("stores holding the lock after Extend = %v; want all three, store 2 repaired", got)
		}
		wantNil(t, "Unlock(r)", l.Unlock(ctx, held))
		noResidue(t, ms...)
	})
}
