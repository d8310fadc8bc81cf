package lock_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// raises counts the RaiseFence calls a locker makes.
type raises struct{ n atomic.Int64 }

func (r *raises) Observe(_ context.Context, e lock.Event) {
	if e.Kind == lock.EventStoreCall && e.StoreOp == "raisefence" {
		r.n.Add(1)
	}
}

// A Redlock lock's fence is above the fence of every earlier lock on the
// resource, also when the earlier lock's quorum and the later one share a
// single store whose fences lagged behind: the earlier lock raised that
// store's fences to its own before it was granted.
func TestMultiFenceAboveEveryEarlierLock(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(5)
			l := mustMulti(t, ls, nil)
			wantNil(t, "RaiseFence(r, 100) on m0", ms[0].RaiseFence(ctx, "r", 100))
			failAlways(ms[3], ms[4]) // they miss the first lock, and its raises
			first, err := l.TryLock(ctx, "r", time.Minute)
			wantNil(t, "TryLock(r) on m0, m1, m2", err)
			if first.Fence <= 100 {
				t.Fatalf("first lock's fence = %d; want above m0's 100", first.Fence)
			}
			wantNil(t, "Unlock(first)", l.Unlock(ctx, first))
			for _, m := range ms {
				m.ClearFaults()
			}
			failAlways(ms[0], ms[1]) // the next quorum is m2, m3, m4
			second, err := l.TryLock(ctx, "r", time.Minute)
			wantNil(t, "TryLock(r) on m2, m3, m4", err)
			if second.Fence <= first.Fence {
				t.Errorf("second lock's fence = %d; want above the first's %d (their quorums share m2)", second.Fence, first.Fence)
			}
			for _, m := range ms {
				m.ClearFaults()
			}
			wantNil(t, "Unlock(second)", l.Unlock(ctx, second))
		})
	})
}

// Fences keep increasing over many locks on one resource, whichever
// minority of the stores fails, lags, or is left holding an expired lock.
func TestMultiFencesIncreaseUnderFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ms, ls := memStores(5)
		l := mustMulti(t, ls, nil)
		rng := rand.New(rand.NewPCG(1, 2))
		var last uint64
		for round := range 300 {
			for _, i := range rng.Perm(5)[:rng.IntN(3)] {
				switch rng.IntN(3) {
				case 0:
					ms[i].Inject(memory.Fault{Err: errConnReset, Times: memory.Always})
				case 1:
					ms[i].Inject(memory.Fault{Ops: memory.OpRaiseFence, Err: errConnReset, Times: memory.Always})
				case 2:
					_ = ms[i].RaiseFence(ctx, "r", last+uint64(rng.IntN(10))) // a store ahead of the others
				}
			}
			held, err := l.TryLock(ctx, "r", time.Second)
			if err == nil {
				if held.Fence <= last {
					t.Fatalf("round %d: fence %d after %d; want strictly increasing", round, held.Fence, last)
				}
				last = held.Fence
				if rng.IntN(2) == 0 {
					_ = l.Unlock(ctx, held)
				}
			}
			for _, m := range ms {
				m.ClearFaults()
			}
			time.Sleep(2 * time.Second) // every lock left behind expires
		}
		if last == 0 {
			t.Fatal("no lock was granted: the test shows nothing")
		}
	})
}

// Once the stores' fences are equal, the stores answer a lock with the
// same fence and no raise is needed before the lock is granted: fencing
// costs no second round in the common case, with fresh resource names or
// one name locked again and again.
func TestMultiFenceNeedsNoSecondRound(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			_, ls := memStores(5)
			r := &raises{}
			l := mustMulti(t, ls, &lock.Options{Hook: r})
			var last uint64
			for i := range 200 {
				name := "job/" + strconv.Itoa(i)
				if i%2 == 0 {
					name = "same"
				}
				held, err := l.TryLock(ctx, name, time.Minute)
				wantNil(t, "TryLock("+name+")", err)
				if name == "same" && held.Fence <= last {
					t.Fatalf("fence of same = %d after %d; want increasing", held.Fence, last)
				} else if name == "same" {
					last = held.Fence
				}
				wantNil(t, "Unlock("+name+")", l.Unlock(ctx, held))
				synctest.Wait() // every store saw the release (Unlock returns once a quorum did)
			}
			if n := r.n.Load(); n != 0 {
				t.Errorf("200 locks on stores whose fences were equal made %d RaiseFence calls; want none", n)
			}
		})
	})
}

// A quorum that cannot establish its fence (the stores that answered a
// lower fence cannot raise it) grants nothing and leaves nothing behind.
func TestMultiFenceNotEstablished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ms, ls := memStores(3)
		l := mustMulti(t, ls, nil)
		wantNil(t, "RaiseFence(r, 100) on m0", ms[0].RaiseFence(ctx, "r", 100))
		for _, m := range ms[1:] {
			m.Inject(memory.Fault{Ops: memory.OpRaiseFence, Err: errConnReset, Times: memory.Always})
		}
		_, err := l.TryLock(ctx, "r", time.Minute)
		wantIs(t, "TryLock(r) with the lower stores unable to raise their fences", err, lock.ErrUnavailable)
		if !strings.Contains(err.Error(), "fence") {
			t.Errorf("error %q does not say the fence could not be established", err)
		}
		synctest.Wait()
		noResidue(t, ms...)

		// Stores that did not grant the lock do not count, even once
		// raised: a competitor holding m3 and m4 took them before the raise,
		// with low fences, and could later add m1 and m2 (not raised) to
		// form a quorum whose fence is below this lock's.
		ms, ls = memStores(5)
		l = mustMulti(t, ls, nil)
		wantNil(t, "RaiseFence(r, 100) on m0", ms[0].RaiseFence(ctx, "r", 100))
		holdElsewhere(t, ms[3], "r", time.Hour)
		holdElsewhere(t, ms[4], "r", time.Hour)
		for _, m := range ms[1:3] {
			m.Inject(memory.Fault{Ops: memory.OpRaiseFence, Err: errConnReset, Times: memory.Always})
		}
		_, err = l.TryLock(ctx, "r", time.Minute)
		wantIs(t, "TryLock(r) with the granting stores unable to raise, the refusing ones able", err, lock.ErrUnavailable)
		synctest.Wait()
		for _, m := range ms[:3] {
			noResidue(t, m)
		}
	})
}

// A MultiLocker fences only when every store can raise fences, and not
// with NoFence.
func TestMultiFenceOnlyWhenEveryStoreCanRaise(t *testing.T) {
	ctx := context.Background()
	_, ls := memStores(3)
	held, err := mustMulti(t, ls, &lock.Options{NoFence: true}).TryLock(ctx, "a", time.Minute)
	wantNil(t, "TryLock(a) with NoFence", err)
	if held.Fence != 0 {
		t.Errorf("fence with NoFence = %d; want 0", held.Fence)
	}
	ls[2] = basic{memory.New()}
	held, err = mustMulti(t, ls, nil).TryLock(ctx, "b", time.Minute)
	wantNil(t, "TryLock(b) with a store that cannot fence", err)
	if held.Fence != 0 {
		t.Errorf("fence with a store that cannot fence = %d; want 0", held.Fence)
	}
}
