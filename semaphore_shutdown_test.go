package lock_test

import (
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Shutdown of the locker a semaphore is built on shuts the semaphore down
// with it, natively as with plain locks: a Lock waiting for a permit ends
// with ErrClosed, the permits it held are released, and new permits and
// extensions are refused with ErrClosed.
func TestSemaphoreShutDownWithItsLocker(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		l := newLocker(t)
		sem := mustSemaphore(t, l, 2)
		held, err := sem.TryLock(ctx, "jobs", time.Minute)
		wantNil(t, "sem.TryLock(jobs)", err)
		other := mustSemaphore(t, newLocker(t), 2) // another process's
		o1, err := other.TryLock(ctx, "jobs", time.Minute)
		wantNil(t, "other.TryLock(jobs)", err)

		waiting := make(chan error, 1)
		go func() {
			_, err := sem.Lock(ctx, "jobs", time.Minute)
			waiting <- err
		}()
		synctest.Wait() // the Lock waits for one of the 2 permits held
		wantNil(t, "locker.Shutdown()", l.Shutdown(ctx))
		wantIs(t, "sem.Lock(jobs) waiting while its locker shut down", <-waiting, lock.ErrClosed)

		o2, err := other.TryLock(ctx, "jobs", time.Minute)
		wantNil(t, "other.TryLock(jobs) after the locker's Shutdown released sem's permit", err)
		_, err = sem.TryLock(ctx, "jobs", time.Minute)
		wantIs(t, "sem.TryLock(jobs) after its locker's Shutdown", err, lock.ErrClosed)
		_, err = sem.Extend(ctx, held, time.Minute)
		wantIs(t, "sem.Extend(held) after its locker's Shutdown", err, lock.ErrClosed)
		wantIs(t, "sem.Unlock(held) after its locker's Shutdown released it", sem.Unlock(ctx, held), lock.ErrNotHeld)

		wantNil(t, "other.Unlock(o1)", other.Unlock(ctx, o1))
		wantNil(t, "other.Unlock(o2)", other.Unlock(ctx, o2))
		noPermits(t, mems, "jobs")
	})
}

// A native semaphore no longer referenced while it holds a permit is
// still shut down, and its permit released, by its locker's Shutdown:
// the locker holds its semaphores weakly, and a permit keeps its
// semaphore reachable.
func TestSemaphoreDroppedWithPermitShutDownWithItsLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		l := mustSingle(t, m, nil)
		func() {
			sem := mustSemaphore(t, l, 2)
			_, err := sem.TryLock(ctx, "jobs", time.Minute)
			wantNil(t, "sem.TryLock(jobs)", err)
		}()
		runtime.GC()
		runtime.GC()
		wantNil(t, "locker.Shutdown()", l.Shutdown(ctx))
		noPermits(t, []*memory.Store{m}, "jobs")
	})
}

// A Lock waiting for a permit that its semaphore does not hold (every
// permit is another process's) ends with ErrClosed as soon as the locker
// the semaphore is built on shuts down, however it was built: a
// semaphore of plain locks no longer waits on until a release or its
// wait's end, as a Lock on the locker itself does not.
func TestSemaphoreWaitEndsAtItsLockersShutdown(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		l := newLocker(t)
		sem := mustSemaphore(t, l, 2)
		other := mustSemaphore(t, newLocker(t), 2) // another process's
		var held []lock.Lock
		for range 2 {
			p, err := other.TryLock(ctx, "jobs", time.Minute)
			wantNil(t, "other.TryLock(jobs)", err)
			held = append(held, p)
		}

		waiting := make(chan error, 1)
		go func() {
			_, err := sem.Lock(ctx, "jobs", time.Minute)
			waiting <- err
		}()
		synctest.Wait() // the Lock waits for one of the 2 permits other holds
		wantNil(t, "locker.Shutdown()", l.Shutdown(ctx))
		endsAtOnce(t, "sem.Lock(jobs)", waiting)

		for _, p := range held {
			wantNil(t, "other.Unlock(permit)", other.Unlock(ctx, p))
		}
		noPermits(t, mems, "jobs")
	})
}

// endsAtOnce fails the test unless the call whose outcome done carries
// has returned ErrClosed once every goroutine of the bubble is blocked,
// with no time passed.
func endsAtOnce(t *testing.T, call string, done <-chan error) {
	t.Helper()
	synctest.Wait()
	select {
	case err := <-done:
		wantIs(t, call, err, lock.ErrClosed)
	default:
		t.Fatalf("%s waiting when its locker shut down still waits; want ErrClosed at once", call)
	}
}

// A semaphore or read-write lock built on a locker that is already shut
// down is shut down too, however it is built: its Lock and TryLock
// report ErrClosed and take nothing (a native semaphore took permits).
func TestSemaphoreBuiltOnAShutLocker(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		l := newLocker(t)
		wantNil(t, "locker.Shutdown()", l.Shutdown(ctx))
		sem := mustSemaphore(t, l, 2)
		_, err := sem.TryLock(ctx, "jobs", time.Minute)
		wantIs(t, "sem.TryLock(jobs) of a semaphore built on a shut locker", err, lock.ErrClosed)
		_, err = sem.Lock(ctx, "jobs", time.Minute)
		wantIs(t, "sem.Lock(jobs) of a semaphore built on a shut locker", err, lock.ErrClosed)
		rw := mustRW(t, l)
		_, err = rw.Reader().TryLock(ctx, "doc", time.Minute)
		wantIs(t, "Reader().TryLock(doc) of a RWLocker built on a shut locker", err, lock.ErrClosed)
		_, err = rw.Writer().TryLock(ctx, "doc", time.Minute)
		wantIs(t, "Writer().TryLock(doc) of a RWLocker built on a shut locker", err, lock.ErrClosed)
		noPermits(t, mems, "jobs")
		noRW(t, mems, "doc")
	})
}
