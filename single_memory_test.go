package lock_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A SingleLocker over the memory store keeps no held set of its own: the
// store records which locker took each lock. UnlockAll releases the
// locks of its own locker only, not those of another locker on the same
// store, nor one another locker released.
func TestSingleMemoryUnlockAllOwnLocksOnly(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	a, b := mustSingle(t, m, nil), mustSingle(t, m, nil)
	for _, r := range []string{"a1", "a2", "handed"} {
		_, err := a.TryLock(ctx, r, time.Minute)
		wantNil(t, "a.TryLock("+r+")", err)
	}
	_, err := b.TryLock(ctx, "b1", time.Minute)
	wantNil(t, "b.TryLock(b1)", err)
	handed, err := a.TryLock(ctx, "handed2", time.Minute)
	wantNil(t, "a.TryLock(handed2)", err)
	wantNil(t, "b.Unlock(a's lock)", b.Unlock(ctx, handed))

	wantNil(t, "a.UnlockAll()", a.UnlockAll(ctx))
	if got, want := m.Resources(), []string{"b1"}; !slices.Equal(got, want) {
		t.Errorf("held after a.UnlockAll() = %q; want %q", got, want)
	}
	wantNil(t, "b.Shutdown()", b.Shutdown(ctx))
	noResidue(t, m)
}

// of returns the events r kept of the kinds given, each as f says.
func of[T any](r *rvRecorder, f func(lock.Event) T, kinds ...lock.EventKind) []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []T
	for _, e := range r.ev {
		if slices.Contains(kinds, e.Kind) {
			out = append(out, f(e))
		}
	}
	return out
}

// The locks UnlockAll releases are the locks the locker handed out, as
// the store recorded them: token, fence and validity (that of the last
// extension, whatever the lock delay).
func TestSingleMemoryUnlockAllReleasesTheLocksHandedOut(t *testing.T) {
	for _, delay := range []time.Duration{0, 5 * time.Second} {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			m := memory.New()
			rec := &rvRecorder{}
			l := mustSingle(t, m, &lock.Options{Hook: rec, LockDelay: delay})
			first, err := l.TryLock(ctx, "first", time.Second)
			wantNil(t, "TryLock(first)", err)
			time.Sleep(300 * time.Millisecond)
			second, err := l.TryLock(ctx, "second", 3*time.Second)
			wantNil(t, "TryLock(second)", err)
			time.Sleep(100 * time.Millisecond)
			second, err = l.Extend(ctx, second, 2*time.Second)
			wantNil(t, "Extend(second)", err)

			wantNil(t, "UnlockAll()", l.UnlockAll(ctx))
			got := of(rec, func(e lock.Event) lock.Lock { return e.Lock }, lock.EventReleased)
			slices.SortFunc(got, func(a, b lock.Lock) int { return len(a.Resource) - len(b.Resource) })
			if len(got) != 2 || !sameLock(got[0], first) || !sameLock(got[1], second) {
				t.Errorf("LockDelay %v: UnlockAll released %+v; want %+v and %+v", delay, got, first, second)
			}
			noResidue(t, m)
		})
	}
}

func sameLock(a, b lock.Lock) bool {
	return a.Resource == b.Resource && a.Token == b.Token && a.Fence == b.Fence && a.ValidUntil.Equal(b.ValidUntil)
}

// A hook on a locker over the memory store sees the duration of every
// call: on the fake clock, zero for a store that answers at once, and the
// store's delay for a slow one.
func TestSingleMemoryHookDurations(t *testing.T) {
	for _, delay := range []time.Duration{0, 3 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			m := memory.New()
			if delay > 0 {
				m.Inject(memory.Fault{Ops: memory.OpAcquire | memory.OpRelease, Delay: delay, Times: memory.Always})
			}
			rec := &rvRecorder{}
			l := mustSingle(t, m, &lock.Options{Hook: rec})
			held, err := l.TryLock(ctx, "r", time.Second)
			wantNil(t, "TryLock(r)", err)
			wantNil(t, "Unlock(r)", l.Unlock(ctx, held))
			s := delay.String()
			got := of(rec, func(e lock.Event) string { return e.Kind.String() + " " + e.StoreOp + ": " + e.Duration.String() },
				lock.EventStoreCall, lock.EventAcquired, lock.EventReleased)
			wantEvents(t, "TryLock and Unlock, store delay "+s, got,
				"store call acquire: "+s, "acquired : "+s, "store call release: "+s, "released : "+s)
		})
	}
}
