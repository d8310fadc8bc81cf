package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/brokenstore"
	"github.com/lockkit/lock/stores/memory"
)

// An Unlock whose releases applied but whose replies were lost succeeds:
// every store held the lock, and none holds it now. The locker tries a
// failed release again, and that try finds nothing; it used to count
// those stores as having lost the lock, and report ErrNotHeld ("the
// critical section outlived its lock") for a lock held everywhere.
func TestMultiUnlockWithLostRepliesSucceeds(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(3)
			m := mustMulti(t, ls, nil)
			l, err := m.TryLock(ctx, "r", time.Minute)
			wantNil(t, "TryLock(r)", err)
			synctest.Wait() // every store answered
			for _, s := range ms[:2] {
				s.Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, AfterApply: true})
			}
			wantNil(t, "Unlock(r) with two of three releases' replies lost after applying", m.Unlock(ctx, l))
			noResidue(t, ms...)
			if locked, err := m.IsLocked(ctx, "r"); err != nil || locked {
				t.Errorf("IsLocked(r) after Unlock = %v, %v; want false, nil", locked, err)
			}
		})
	})
}

// quorumEvents records the EventQuorum events of a locker.
type quorumEvents struct{ events chan lock.Event }

func (q quorumEvents) Observe(_ context.Context, e lock.Event) {
	if e.Kind == lock.EventQuorum {
		q.events <- e
	}
}

// EventQuorum says what the attempt ended with: an attempt that fails
// with ErrNotAcquired, because the store still answering when the
// quorum was missed refused too, is contention, not a store failure.
// The event used to be classified on the answers in when the quorum was
// missed (one refusal, one failure: ErrUnavailable), so a hook counting
// contention from it (otelhook's lock.contention) missed it.
func TestMultiQuorumEventMatchesTheOutcome(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(3)
			for _, i := range []int{0, 2} {
				if err := ms[i].Acquire(ctx, "r", "another owner", time.Minute); err != nil {
					t.Fatalf("Acquire(r) on %s = %v", ms[i], err)
				}
			}
			ms[1].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})
			ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 10 * time.Millisecond})
			q := quorumEvents{make(chan lock.Event, 1)}
			m := mustMulti(t, ls, &lock.Options{Hook: q})
			_, err := m.TryLock(ctx, "r", time.Minute)
			wantIs(t, "TryLock(r) held by another on two of three stores", err, lock.ErrNotAcquired)
			e := <-q.events
			if !errors.Is(e.Err, lock.ErrNotAcquired) || e.Refused != 2 || e.Failed != 1 {
				t.Errorf("EventQuorum = Err %v, Refused %d, Failed %d; want ErrNotAcquired, 2, 1 (the answers the attempt ended on)", e.Err, e.Refused, e.Failed)
			}
		})
	})
}

// A store that refuses an acquisition as invalid input (a TTL under its
// minimum, say) refuses it again: once a quorum of the others granted
// the lock, the background does not ask it again, as Unlock does not ask
// such a store to release again. It used to be asked twice more.
func TestMultiBackfillSkipsAStoreThatRefusedTheRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		var acquires atomic.Int64
		refused := fmt.Errorf("%w: ttl under the store's minimum", lock.ErrInvalid)
		refusing := brokenstore.New(func(_ *brokenstore.Store, _ *memory.Store, f *brokenstore.Funcs) {
			f.Acquire = func(context.Context, string, string, time.Duration) error {
				acquires.Add(1)
				return refused
			}
			f.AcquireFenced = func(context.Context, string, string, time.Duration) (uint64, error) {
				acquires.Add(1)
				return 0, refused
			}
		})
		m := mustMulti(t, []lock.Store{memory.New(), memory.New(), refusing}, nil)
		l, err := m.TryLock(ctx, "r", time.Minute)
		wantNil(t, "TryLock(r) with one of three stores refusing the request", err)
		time.Sleep(time.Second) // past every background round
		if n := acquires.Load(); n != 1 {
			t.Errorf("the store that refused the acquisition as invalid was asked %d times; want 1: it refuses again", n)
		}
		wantNil(t, "Unlock(r)", m.Unlock(ctx, l))
	})
}
