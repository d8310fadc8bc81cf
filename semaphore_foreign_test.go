package lock_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A Lock that is not one of a semaphore's permits (a plain lock of its
// locker, a token naming no slot or a slot beyond the limit) passed to
// the semaphore's Unlock or Extend is not held: the call reports
// ErrNotHeld however the semaphore was built (a store that keeps permits
// can only tell by asking), releases nothing, and only a malformed Lock
// (zero, empty resource or token) is ErrInvalid, on every setup alike.
func TestSemaphoreLockNotAPermit(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		l := newLocker(t)
		sem := mustSemaphore(t, l, 2)
		p, err := sem.TryLock(ctx, "jobs", time.Minute)
		wantNil(t, "sem.TryLock(jobs)", err)
		plain, err := l.TryLock(ctx, "jobs", time.Minute)
		wantNil(t, "locker.TryLock(jobs)", err)

		for _, c := range []struct {
			name string
			l    lock.Lock
		}{
			{"the locker's plain lock", plain},
			{"token naming no slot", lock.Lock{Resource: "jobs", Token: "no-slot"}},
			{"token naming slot 7 of 2", lock.Lock{Resource: "jobs", Token: "7/2:abc"}},
			{"token naming slot -1", lock.Lock{Resource: "jobs", Token: "-1/2:abc"}},
			{"token naming slot 0 with nothing after", lock.Lock{Resource: "jobs", Token: "0/2:"}},
			{"token naming slot 0 with no limit", lock.Lock{Resource: "jobs", Token: "0:abc"}},
			{"the permit's token, its slot written 0-padded", lock.Lock{Resource: "jobs", Token: "0" + p.Token}},
			{"the permit's token, its slot written with a sign", lock.Lock{Resource: "jobs", Token: "+" + p.Token}},
		} {
			wantIs(t, "sem.Unlock("+c.name+")", sem.Unlock(ctx, c.l), lock.ErrNotHeld)
			_, err := sem.Extend(ctx, c.l, time.Minute)
			wantIs(t, "sem.Extend("+c.name+")", err, lock.ErrNotHeld)
		}
		if n, err := sem.Permits(ctx, "jobs"); n != 1 || err != nil {
			t.Fatalf("sem.Permits(jobs) after Unlocks of locks that are not permits = %d, %v; want 1, nil", n, err)
		}
		if ok, err := l.IsLocked(ctx, "jobs"); !ok || err != nil {
			t.Fatalf("locker.IsLocked(jobs) after sem.Unlock(the plain lock) = %v, %v; want true, nil", ok, err)
		}

		for _, c := range []struct {
			name string
			l    lock.Lock
		}{
			{"zero Lock", lock.Lock{}},
			{"empty resource", lock.Lock{Token: p.Token}},
			{"empty token", lock.Lock{Resource: "jobs"}},
		} {
			wantIs(t, "sem.Unlock("+c.name+")", sem.Unlock(ctx, c.l), lock.ErrInvalid)
			_, err := sem.Extend(ctx, c.l, time.Minute)
			wantIs(t, "sem.Extend("+c.name+")", err, lock.ErrInvalid)
		}

		wantNil(t, "sem.Unlock(p)", sem.Unlock(ctx, p))
		wantNil(t, "locker.Unlock(plain)", l.Unlock(ctx, plain))
		noPermits(t, mems, "jobs")
	})
}
