package lock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// holds reports which stores hold resource (in these tests, only the
// lock under test takes it).
func holds(t *testing.T, ms []*memory.Store, resource string) []bool {
	t.Helper()
	out := make([]bool, len(ms))
	for i, m := range ms {
		ok, err := m.Exists(context.Background(), resource)
		wantNil(t, "Exists", err)
		out[i] = ok
	}
	return out
}

func all(b []bool) bool {
	for _, v := range b {
		if !v {
			return false
		}
	}
	return true
}

// Stores that failed while a lock was granted are asked again in the
// background, so that the lock regains its full redundancy without an
// extension: losing two more stores then leaves it held by a quorum.
func TestMultiBackfillsFailedStores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ms, ls := memStores(5)
		l := mustMulti(t, ls, nil) // store timeout: 50ms
		ms[0].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})
		ms[1].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset, Times: 2}) // fails its first retry too
		held, err := l.TryLock(ctx, "res", time.Second)
		wantNil(t, "TryLock(res) with two stores failing", err)
		if got := holds(t, ms, "res"); got[0] || got[1] {
			t.Fatalf("stores holding the lock right after TryLock = %v; want the failed ones not yet", got)
		}
		time.Sleep(50 * time.Millisecond) // one store timeout: the first retry
		synctest.Wait()
		if got := holds(t, ms, "res"); !got[0] || got[1] {
			t.Fatalf("after the first retry, stores holding the lock = %v; want store 0 back, store 1 still failing", got)
		}
		time.Sleep(50 * time.Millisecond) // the second retry
		synctest.Wait()
		if got := holds(t, ms, "res"); !all(got) {
			t.Fatalf("after the second retry, stores holding the lock = %v; want all five", got)
		}
		// The retried stores hold it for what the others have left, not
		// for a new TTL.
		if rem, _, _ := ms[1].TTL(ctx, "res"); rem > 900*time.Millisecond {
			t.Errorf("retried store holds the lock for %v more; want at most what the others have left (900ms)", rem)
		}
		// Two stores lose it: a quorum still holds it, so nobody else can
		// take it.
		ms[3].Expire("res")
		ms[4].Expire("res")
		other := mustMulti(t, ls, nil)
		_, err = other.TryLock(ctx, "res", time.Second)
		wantIs(t, "another owner's TryLock(res) after two stores lost it", err, lock.ErrNotAcquired)
		wantNil(t, "Unlock(res)", l.Unlock(ctx, held))
		noResidue(t, ms...)
	})
}

// A store that keeps refusing (another owner holds it) or failing is
// asked again a bounded number of times, never after the lock's validity.
func TestMultiBackfillIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		cs := []*counting{newCounting("c0"), newCounting("c1"), newCounting("c2"), newCounting("c3"), newCounting("c4")}
		ls := []lock.Store{cs[0], cs[1], cs[2], cs[3], cs[4]}
		holdElsewhere(t, cs[0], "res", time.Hour)
		cs[1].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset, Times: memory.Always})
		for _, c := range cs {
			c.calls.Store(0)
		}
		l := mustMulti(t, ls, nil)
		held, err := l.TryLock(ctx, "res", time.Second)
		wantNil(t, "TryLock(res)", err)
		time.Sleep(2 * time.Second) // past the lock's validity
		if n := cs[0].calls.Load(); n != 3 {
			t.Errorf("the store held by another owner got %d calls; want 3 (the attempt and two retries)", n)
		}
		if n := cs[1].calls.Load(); n != 3 {
			t.Errorf("the failing store got %d calls; want 3 (the attempt and two retries)", n)
		}
		cs[1].ClearFaults()
		wantIs(t, "Unlock(res) after it expired", l.Unlock(ctx, held), lock.ErrNotHeld)
	})
}

// Unlock stops the background retries and waits for those under way, so
// none can overtake the release and leave the lock behind.
func TestMultiUnlockStopsBackfill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ms, ls := memStores(3)
		ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})            // fails in the attempt
		ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 30 * time.Millisecond}) // its retry is slow
		l := mustMulti(t, ls, &lock.Options{StoreTimeout: 40 * time.Millisecond})
		held, err := l.TryLock(ctx, "res", time.Minute)
		wantNil(t, "TryLock(res)", err)
		time.Sleep(50 * time.Millisecond) // the retry is under way
		start := time.Now()
		wantNil(t, "Unlock(res) during a background retry", l.Unlock(ctx, held))
		if d := time.Since(start); d != 20*time.Millisecond {
			t.Errorf("Unlock returned after %v; want 20ms, once the retry under way answered", d)
		}
		time.Sleep(time.Second)
		noResidue(t, ms...)

		// Unlocked before the first retry: none is made.
		ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})
		held, err = l.TryLock(ctx, "res", time.Minute)
		wantNil(t, "TryLock(res)", err)
		wantNil(t, "Unlock(res) at once", l.Unlock(ctx, held))
		time.Sleep(time.Second)
		noResidue(t, ms...)
	})
}

// The background work waits on timers, not in goroutines: a synctest test
// that leaves a lock with pending retries, or a failed release, may end
// at once (a goroutine blocked then would be reported as a deadlock).
func TestBackgroundWorkLetsASynctestEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms, ls := memStores(3)
		l := mustMulti(t, ls, nil)
		ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})
		_, err := l.TryLock(t.Context(), "r", time.Minute)
		wantNil(t, "TryLock(r) with a store failing", err)
		ms, ls = memStores(3)
		l = mustMulti(t, ls, nil)
		held, err := l.TryLock(t.Context(), "s", time.Minute)
		wantNil(t, "TryLock(s)", err)
		ms[1].Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, Times: memory.Always})
		wantNil(t, "Unlock(s) with a store failing its releases", l.Unlock(t.Context(), held))
	})
}
