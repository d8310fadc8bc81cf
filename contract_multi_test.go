package lock_test

// Black-box review of the MultiLocker's documented semantics.

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

func TestContractMultiQuorumOutcomes(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := context.Background()
			ms, ls := memStores(3)
			m := mustMulti(t, ls, nil)

			// One store slow: granted by the other two at once.
			ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour})
			start := time.Now()
			k, err := m.TryLock(ctx, "r", time.Minute)
			wantNil(t, "TryLock with one slow store", err)
			if d := time.Since(start); d > 50*time.Millisecond {
				t.Errorf("TryLock with one slow store took %v; want at most the store timeout (50ms)", d)
			}
			ms[2].ClearFaults()
			time.Sleep(time.Second) // the background re-ask
			for i, s := range ms {
				if ok, _ := s.Exists(ctx, "r"); !ok {
					t.Errorf("store %d does not hold the lock after the background re-ask", i)
				}
			}
			// Extend re-takes the lock where it was lost.
			ms[0].Expire("r")
			k, err = m.Extend(ctx, k, time.Minute)
			wantNil(t, "Extend with one store lost", err)
			if ok, _ := ms[0].Exists(ctx, "r"); !ok {
				t.Errorf("Extend did not re-take the lock on the store that lost it")
			}
			// Unlock succeeds once a quorum released; a failed store is retried.
			ms[1].Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset})
			wantNil(t, "Unlock with one store failing", m.Unlock(ctx, k))
			time.Sleep(time.Second)
			noResidue(t, ms...)

			// Two stores fail: unavailable, with the stores named.
			for _, s := range ms[:2] {
				s.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})
			}
			_, err = m.TryLock(ctx, "r", time.Minute)
			wantIs(t, "TryLock with two failing stores", err, lock.ErrUnavailable)
			wantIs(t, "TryLock with two failing stores", err, errConnReset)
			var le *lock.Error
			if !errors.As(err, &le) || len(le.Stores) != 2 || le.Stores[0].Store != "m0" || le.Stores[1].Store != "m1" || le.Stores[0].Index != 0 {
				t.Errorf("Error.Stores = %+v; want m0 and m1 with their errors", le)
			}
			time.Sleep(time.Second)
			noResidue(t, ms...)

			// Two stores held by another: not acquired, nothing left.
			other := mustSingle(t, ms[0], nil)
			o1, _ := other.TryLock(ctx, "r", time.Minute)
			other2 := mustSingle(t, ms[1], nil)
			o2, _ := other2.TryLock(ctx, "r", time.Minute)
			_, err = m.TryLock(ctx, "r", time.Minute)
			wantIs(t, "TryLock held on two stores", err, lock.ErrNotAcquired)
			// TryLock returns once two refusals decide it; on the goroutine
			// path the third store's call may still be under way, and its
			// grant is released in the background once it answers.
			synctest.Wait()
			if ok, _ := ms[2].Exists(ctx, "r"); ok {
				t.Errorf("the granting store still holds the failed attempt's lock")
			}
			if ok, _ := m.IsLocked(ctx, "r"); !ok {
				t.Errorf("IsLocked = false; want true (some store holds it)")
			}
			// Held by another on one store, failing on one: not sure of contention.
			wantNil(t, "Unlock o2", other2.Unlock(ctx, o2))
			ms[1].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})
			_, err = m.TryLock(ctx, "r", time.Minute)
			wantIs(t, "TryLock with one refusal, one failure, one grant", err, lock.ErrUnavailable)
			if errors.Is(err, lock.ErrNotAcquired) {
				t.Errorf("TryLock with a failed store deciding = %v; must not match ErrNotAcquired", err)
			}
			wantNil(t, "Unlock o1", other.Unlock(ctx, o1))
			time.Sleep(time.Second)
			noResidue(t, ms...)

			// Unlock when only one store still holds it: not held.
			k, err = m.TryLock(ctx, "r", time.Minute)
			wantNil(t, "TryLock", err)
			synctest.Wait() // the third store's call, on the goroutine path
			ms[0].Expire("r")
			ms[1].Expire("r")
			wantIs(t, "Unlock held by one store of three", m.Unlock(ctx, k), lock.ErrNotHeld)
			noResidue(t, ms...)
			// Unlock undecided: two stores fail.
			k, err = m.TryLock(ctx, "r", time.Minute)
			wantNil(t, "TryLock", err)
			for _, s := range ms[:2] {
				s.Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, Times: memory.Always})
			}
			err = m.Unlock(ctx, k)
			wantIs(t, "Unlock with two failing stores", err, lock.ErrUnavailable)
			if errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("Unlock undecided = %v; must not match ErrNotHeld", err)
			}
			for _, s := range ms {
				s.ClearFaults()
			}
			time.Sleep(time.Second)
			noResidue(t, ms...)
			wantNil(t, "Shutdown", m.Shutdown(ctx))
		})
	})
}
