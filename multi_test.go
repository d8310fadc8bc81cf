package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/quorum"
	"github.com/lockkit/lock/stores/memory"
)

func failAlways(ms ...*memory.Store) {
	for _, m := range ms {
		m.Inject(memory.Fault{Err: errConnReset, Times: memory.Always})
	}
}

func TestMultiQuorumWithFailingStores(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(5)
			l := mustMulti(t, ls, nil)
			failAlways(ms[0], ms[3])
			held, err := l.TryLock(ctx, "res", time.Second)
			wantNil(t, "TryLock(res) with 2 of 5 stores failing", err)
			if held.Fence == 0 {
				t.Errorf("multi-store lock fence = 0; want a fence: every store can raise fences")
			}
			wantNil(t, "Unlock(res) with 2 of 5 stores failing: 3 released it", l.Unlock(ctx, held))
			for _, m := range ms {
				m.ClearFaults()
			}
			noResidue(t, ms...)

			failAlways(ms[0], ms[2], ms[4])
			_, err = l.TryLock(ctx, "res", time.Second)
			wantIs(t, "TryLock(res) with 3 of 5 stores failing", err, lock.ErrUnavailable)
			if errors.Is(err, lock.ErrNotAcquired) {
				t.Errorf("TryLock(res) with 3 of 5 stores failing = %v; must not claim contention", err)
			}
			var le *lock.Error
			if !errors.As(err, &le) {
				t.Fatalf("error %T is not a *lock.Error", err)
			}
			var named []string
			for _, s := range le.Stores {
				named = append(named, s.Store)
				if !errors.Is(s.Err, errConnReset) {
					t.Errorf("store %s error = %v; want the store's own error", s.Store, s.Err)
				}
			}
			if strings.Join(named, ",") != "m0,m2,m4" {
				t.Errorf("error names stores %v; want the failing m0, m2, m4", named)
			}
			if !strings.Contains(err.Error(), "m2: connection reset by peer") {
				t.Errorf("error message %q does not say which stores failed and why", err)
			}
			for _, m := range ms {
				m.ClearFaults()
			}
			synctest.Wait()     // stores still answering are released once they answer
			noResidue(t, ms...) // the two stores that granted were released
		})
	})
}

func TestMultiContention(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(5)
			for _, m := range ms[:3] {
				holdElsewhere(t, m, "res", time.Hour)
			}
			l := mustMulti(t, ls, nil)
			_, err := l.TryLock(ctx, "res", time.Second)
			wantIs(t, "TryLock(res) held elsewhere on 3 of 5 stores", err, lock.ErrNotAcquired)
			synctest.Wait() // the stores still answering are released once they answer
			noResidue(t, ms[3:]...)
			for _, m := range ms[:3] {
				if r := m.Resources(); len(r) != 1 {
					t.Errorf("%s holds %q; want only the other owner's lock", m, r)
				}
			}
		})
	})
}

// Lost replies: stores that applied the acquisition but whose answer was
// lost count as failures, and are released after a failed attempt.
func TestMultiLostRepliesLeaveNothingBehind(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ms, ls := memStores(5)
			for _, m := range ms[1:4] {
				m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset, AfterApply: true})
			}
			l := mustMulti(t, ls, nil)
			_, err := l.TryLock(t.Context(), "res", time.Second)
			wantIs(t, "TryLock(res) with 3 lost replies", err, lock.ErrUnavailable)
			synctest.Wait() // stores still answering are released once they answer
			noResidue(t, ms...)
		})
	})
}

// A release after a failed attempt that fails itself (the fault that lost
// the acquisition's reply broke the release's connection too) is tried
// again, so the attempt still leaves nothing behind.
func TestMultiFailedCleanupIsRetried(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ms, ls := memStores(3)
			for _, m := range ms[:2] {
				m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset, AfterApply: true})
				m.Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, Times: 2})
			}
			l := mustMulti(t, ls, nil)
			_, err := l.TryLock(t.Context(), "res", time.Second)
			wantIs(t, "TryLock(res) with 2 of 3 replies lost", err, lock.ErrUnavailable)
			synctest.Wait() // stores still answering are released once they answer
			noResidue(t, ms...)
		})
	})
}

// The attempt decides as soon as the quorum is met: with stores answering
// after 10, 20, 30, 40 and 50ms, a majority lock is granted at 30ms, and
// its validity is ttl − drift counted from the start.
func TestMultiValidityAndEarlyReturn(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ms, ls := memStores(5)
			for i, m := range ms {
				m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Duration(i+1) * 10 * time.Millisecond})
			}
			l := mustMulti(t, ls, &lock.Options{StoreTimeout: time.Second})
			start := time.Now()
			held, err := l.TryLock(t.Context(), "res", time.Second)
			wantNil(t, "TryLock(res)", err)
			if d := time.Since(start); d != 30*time.Millisecond {
				t.Errorf("TryLock returned after %v; want 30ms, when the third store answered", d)
			}
			if want := start.Add(time.Second - 12*time.Millisecond); !held.ValidUntil.Equal(want) {
				t.Errorf("ValidUntil = start+%v; want start+%v (ttl − 1%% − 2ms)", held.ValidUntil.Sub(start), want.Sub(start))
			}
			if rem := held.Remaining(); rem != 958*time.Millisecond {
				t.Errorf("Remaining() = %v; want 958ms (1s − 30ms elapsed − 12ms drift)", rem)
			}
			time.Sleep(50 * time.Millisecond) // the slower stores answer too
			wantNil(t, "Unlock(res)", l.Unlock(t.Context(), held))
			noResidue(t, ms...)

			// Drift uses the largest granularity among the stores.
			g := []lock.Store{memory.New(), coarse{memory.New(), time.Second}, memory.New()}
			lg := mustMulti(t, g, nil)
			start = time.Now()
			held, err = lg.TryLock(t.Context(), "res", 5*time.Second)
			wantNil(t, "TryLock(res) with one coarse store", err)
			if want := start.Add(5*time.Second - 1052*time.Millisecond); !held.ValidUntil.Equal(want) {
				t.Errorf("ValidUntil = start+%v; want start+%v (ttl − 1%% − 2ms − 1s granularity)", held.ValidUntil.Sub(start), want.Sub(start))
			}
		})
	})
}

// A store that does not answer costs at most the store timeout, and is
// reported as a timeout — not as the caller's deadline.
func TestMultiStoreTimeout(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ms, ls := memStores(5)
			l := mustMulti(t, ls, &lock.Options{StoreTimeout: 50 * time.Millisecond})
			for _, m := range ms[:2] {
				m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour})
			}
			start := time.Now()
			_, err := l.TryLock(t.Context(), "res", time.Second)
			wantNil(t, "TryLock(res) with 2 of 5 stores hanging", err)
			if d := time.Since(start); d != 0 {
				t.Errorf("TryLock took %v; want an immediate grant from the 3 live stores", d)
			}
			time.Sleep(time.Second) // let the lock and the hanging calls run out

			for _, m := range ms[:3] {
				m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour})
			}
			start = time.Now()
			_, err = l.TryLock(t.Context(), "res2", time.Second)
			wantIs(t, "TryLock(res2) with 3 of 5 stores hanging", err, lock.ErrUnavailable)
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("TryLock(res2) = %v; a store timeout must not look like the caller's deadline", err)
			}
			if d := time.Since(start); d != 50*time.Millisecond {
				t.Errorf("TryLock took %v; want the store timeout, 50ms", d)
			}
			if !strings.Contains(err.Error(), "no answer within 50ms") {
				t.Errorf("error %q does not say the stores timed out", err)
			}
			noResidue(t, ms...)
		})
	})
}

func TestMultiUnlock(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(3)
			l := mustMulti(t, ls, nil)
			held, err := l.TryLock(ctx, "res", time.Minute)
			wantNil(t, "TryLock(res)", err)
			wantNil(t, "Unlock(res)", l.Unlock(ctx, held))
			noResidue(t, ms...)

			held, err = l.TryLock(ctx, "res", time.Minute)
			wantNil(t, "TryLock(res)", err)
			synctest.Wait() // the store that answered after the quorum has it too
			ms[0].Expire("res")
			ms[1].Expire("res")
			wantIs(t, "Unlock(res) held on 1 of 3 stores", l.Unlock(ctx, held), lock.ErrNotHeld)
			noResidue(t, ms...)

			held, err = l.TryLock(ctx, "res", time.Minute)
			wantNil(t, "TryLock(res)", err)
			synctest.Wait()
			for _, m := range ms[1:] {
				m.Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, Times: memory.Always})
			}
			err = l.Unlock(ctx, held)
			wantIs(t, "Unlock(res) with 2 of 3 stores failing", err, lock.ErrUnavailable)
			if !strings.Contains(err.Error(), "m1") || !strings.Contains(err.Error(), "m2") {
				t.Errorf("error %q does not name the failing stores m1 and m2", err)
			}
			for _, m := range ms {
				m.ClearFaults()
			}
			wantNil(t, "UnlockAll() retries the failed release", l.UnlockAll(ctx))
			noResidue(t, ms...)
		})
	})
}

func TestMultiExtend(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(5)
			l := mustMulti(t, ls, nil)
			held, err := l.TryLock(ctx, "res", time.Second)
			wantNil(t, "TryLock(res)", err)
			synctest.Wait() // the stores that answered after the quorum have it too
			failAlways(ms[0], ms[1])
			time.Sleep(500 * time.Millisecond)
			start := time.Now()
			next, err := l.Extend(ctx, held, 2*time.Second)
			wantNil(t, "Extend(res) with 2 of 5 stores failing", err)
			if want := start.Add(2*time.Second - 22*time.Millisecond); !next.ValidUntil.Equal(want) {
				t.Errorf("ValidUntil after Extend = now+%v; want now+%v", next.ValidUntil.Sub(start), want.Sub(start))
			}
			ms[0].ClearFaults()
			ms[1].ClearFaults()
			for _, m := range ms[2:] {
				m.Expire("res")
			}
			_, err = l.Extend(ctx, next, 2*time.Second)
			wantIs(t, "Extend(res) expired on 3 of 5 stores", err, lock.ErrNotHeld)

			_, err = mustMulti(t, []lock.Store{basic{memory.New()}, basic{memory.New()}, memory.New()}, nil).Extend(ctx, next, time.Second)
			wantIs(t, "Extend on stores that cannot extend", err, errors.ErrUnsupported)
		})
	})
}

func TestMultiIsLocked(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(3)
			l := mustMulti(t, ls, nil)
			if locked, err := l.IsLocked(ctx, "res"); locked || err != nil {
				t.Fatalf("IsLocked(res) = %v, %v; want false, nil", locked, err)
			}
			holdElsewhere(t, ms[2], "res", time.Minute)
			if locked, err := l.IsLocked(ctx, "res"); !locked || err != nil {
				t.Fatalf("IsLocked(res) held on 1 of 3 stores = %v, %v; want true (any store)", locked, err)
			}
			ms[2].Expire("res")
			ms[1].Inject(memory.Fault{Ops: memory.OpExists, Err: errConnReset})
			if _, err := l.IsLocked(ctx, "res"); !errors.Is(err, lock.ErrUnavailable) {
				t.Fatalf("IsLocked(res) with a store failing and none holding = %v; want ErrUnavailable", err)
			}
		})
	})
}

func TestMultiUnanimous(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ms, ls := memStores(3)
			l := mustMulti(t, ls, &lock.Options{Quorum: quorum.Unanimous{}})
			failAlways(ms[1])
			_, err := l.TryLock(t.Context(), "res", time.Second)
			wantIs(t, "TryLock(res) unanimous with a failing store", err, lock.ErrUnavailable)
			ms[1].ClearFaults()
			synctest.Wait() // stores still answering are released once they answer
			noResidue(t, ms...)
			_, err = l.TryLock(t.Context(), "res", time.Second)
			wantNil(t, "TryLock(res) unanimous", err)
		})
	})
}

// Waiters of a multi-store lock wake when the holder releases.
func TestMultiWaiterWakesOnRelease(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			_, ls := memStores(3)
			holder := mustMulti(t, ls, nil)
			held, err := holder.TryLock(t.Context(), "res", time.Hour)
			wantNil(t, "holder TryLock(res)", err)
			go func() {
				time.Sleep(100 * time.Millisecond)
				_ = holder.Unlock(context.Background(), held)
			}()
			l := mustMulti(t, ls, nil)
			start := time.Now()
			_, err = l.Lock(t.Context(), "res", time.Second, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 10 * time.Second}))
			wantNil(t, "Lock(res)", err)
			if d := time.Since(start); d != 100*time.Millisecond {
				t.Errorf("acquired after %v; want 100ms, at the release", d)
			}
		})
	})
}

// A store reporting context.DeadlineExceeded while the caller's context is
// alive timed out on its own: the locker's error must not claim that the
// caller's deadline passed.
func TestMultiStoreDeadlineIsNotTheCallers(t *testing.T) {
	stores := []*memory.Store{memory.New(), memory.New(), memory.New()}
	for _, s := range stores[:2] {
		s.Inject(memory.Fault{Ops: memory.OpAcquire, Err: context.DeadlineExceeded})
	}
	l, err := lock.NewMulti([]lock.Store{stores[0], stores[1], stores[2]}, &lock.Options{StoreTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.TryLock(context.Background(), "r", time.Minute)
	if !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryLock with 2 of 3 stores reporting DeadlineExceeded = %v; want ErrUnavailable, not context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "no answer within 1s") {
		t.Errorf("TryLock error %q does not say the stores timed out", err)
	}
}

// An extension re-takes the lock on stores that lost it while a quorum
// still held it, so that later store losses do not drop it below quorum.
func TestMultiExtendRepairsLostVotes(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(5)
			l := mustMulti(t, ls, nil)
			held, err := l.TryLock(ctx, "res", time.Second)
			wantNil(t, "TryLock(res)", err)
			synctest.Wait()
			ms[0].Expire("res") // two stores restart empty
			ms[1].Expire("res")
			holdElsewhere(t, ms[1], "res", time.Hour) // and another owner takes one of them
			held, err = l.Extend(ctx, held, time.Second)
			wantNil(t, "Extend(res) held on 3 of 5 stores", err)
			if ok, _ := ms[0].Exists(ctx, "res"); !ok {
				t.Fatal("the extension did not re-take the lock on the store that lost it")
			}
			failAlways(ms[2]) // one more store fails: 0, 3 and 4 still hold it
			_, err = l.Extend(ctx, held, time.Second)
			wantNil(t, "Extend(res) after one more store failed", err)
			for _, m := range ms {
				m.ClearFaults()
			}
		})
	})
}

// A release that a quorum applied is a success: one store refusing
// connections fails neither Unlock nor Run, the lock leaves the held set,
// and a store that failed to release is asked again in the background.
func TestMultiUnlockToleratesAFailedMinority(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(5)
			l := mustMulti(t, ls, nil)
			failAlways(ms[4]) // connection refused, for every call
			ran := false
			err := lock.Run(ctx, l, "job", time.Second, func(context.Context, lock.Lock) error { ran = true; return nil })
			if err != nil || !ran {
				t.Fatalf("Run(job) with 1 of 5 stores down = %v (ran: %v); want nil", err, ran)
			}
			held, err := l.TryLock(ctx, "res", time.Minute)
			wantNil(t, "TryLock(res) with 1 of 5 stores down", err)
			wantNil(t, "Unlock(res) with 1 of 5 stores down", l.Unlock(ctx, held))
			ms[4].ClearFaults()
			wantNil(t, "UnlockAll() after every lock was released by a quorum", l.UnlockAll(ctx))

			// A store that took the lock but fails its releases for a while:
			// Unlock succeeds, and the background retry frees that store.
			held, err = l.TryLock(ctx, "res", time.Minute)
			wantNil(t, "TryLock(res)", err)
			ms[3].Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, Times: 4})
			wantNil(t, "Unlock(res) with a store failing its releases", l.Unlock(ctx, held))
			if got := ms[3].Resources(); len(got) != 1 {
				t.Fatalf("store m3 holds %q right after Unlock; want the lock it failed to release", got)
			}
			time.Sleep(time.Second) // fake time: the background retries
			noResidue(t, ms...)
		})
	})
}

// Unlock releases the stores an extension re-took: a store that refused
// the attempt (a competitor held it) and that Extend repaired holds the
// lock too.
func TestMultiUnlockReleasesRepairedStores(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(5)
			l := mustMulti(t, ls, nil)
			competitor := holdElsewhere(t, ms[3], "r", time.Hour)
			ms[4].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset}) // background work follows
			held, err := l.TryLock(ctx, "r", time.Minute)
			wantNil(t, "TryLock(r) with a store held by a competitor and one failing", err)
			wantNil(t, "competitor's release", ms[3].Release(ctx, "r", competitor.Token))
			held, err = l.Extend(ctx, held, time.Minute)
			wantNil(t, "Extend(r)", err)
			if got := holds(t, ms, "r"); !all(got) {
				t.Fatalf("stores holding the lock after Extend = %v; want all five, repaired", got)
			}
			wantNil(t, "Unlock(r)", l.Unlock(ctx, held))
			synctest.Wait()
			noResidue(t, ms...)
		})
	})
}
