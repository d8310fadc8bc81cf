package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A semaphore or read-write lock built on a locker that was shut down
// refuses Extend with ErrClosed, as it refuses Lock, however it was built:
// a permit taken by another process is not extended through it.
func TestSemaphoreOnShutLockerRefusesExtend(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		other := mustSemaphore(t, newLocker(t), 2)
		p, err := other.Lock(ctx, "jobs", time.Minute)
		wantNil(t, "other.Lock(jobs)", err)
		otherRW := mustRW(t, newLocker(t))
		r, err := otherRW.Reader().Lock(ctx, "doc", time.Minute)
		wantNil(t, "other Reader().Lock(doc)", err)

		l := newLocker(t)
		wantNil(t, "locker.Shutdown()", l.Shutdown(ctx))
		sem := mustSemaphore(t, l, 2)
		if _, err := sem.Extend(ctx, p, time.Minute); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("sem.Extend(permit) of a semaphore built on a shut locker = %v; want ErrClosed", err)
		}
		rw := mustRW(t, l)
		if _, err := rw.Reader().Extend(ctx, r, time.Minute); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Reader().Extend(reader) of a RWLocker built on a shut locker = %v; want ErrClosed", err)
		}
		wantNil(t, "other.Unlock(permit)", other.Unlock(ctx, p))
		wantNil(t, "other Reader().Unlock(reader)", otherRW.Reader().Unlock(ctx, r))
	})
}
