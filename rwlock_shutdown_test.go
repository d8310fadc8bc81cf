package lock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A side's Lock waiting for the other side or for another writer ends
// with ErrClosed as soon as the locker the RWLocker is built on shuts
// down, as a Lock on the locker itself does, and leaves nothing of its
// own behind (a waiting writer's intent included).
func TestRWLockerWaitEndsAtItsLockersShutdown(t *testing.T) {
	for _, c := range []struct {
		name        string
		holdWriter  bool // the other process holds a writer's lock, else a reader's
		waitsWriter bool // the waiting Lock is a writer's, else a reader's
	}{
		{"reader waiting for a writer", true, false},
		{"writer waiting for a writer", true, true},
		{"writer waiting for a reader", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
				ctx := t.Context()
				l := newLocker(t)
				rw, other := mustRW(t, l), mustRW(t, newLocker(t)) // other is another process's
				holding, waiting := other.Reader(), rw.Reader()
				if c.holdWriter {
					holding = other.Writer()
				}
				if c.waitsWriter {
					waiting = rw.Writer()
				}
				held, err := holding.TryLock(ctx, "doc", time.Minute)
				wantNil(t, "other's TryLock(doc)", err)

				done := make(chan error, 1)
				go func() {
					_, err := waiting.Lock(ctx, "doc", time.Minute)
					done <- err
				}()
				synctest.Wait() // the Lock waits for other's lock
				wantNil(t, "locker.Shutdown()", l.Shutdown(ctx))
				endsAtOnce(t, "Lock(doc)", done)

				wantNil(t, "other's Unlock(held)", holding.Unlock(ctx, held))
				noRW(t, mems, "doc")
			})
		})
	}
}

// Shutdown of the locker a RWLocker is built on releases the locks both
// sides hold, and both sides refuse new locks with ErrClosed, as the
// RWLocker's documentation says.
func TestRWLockerShutDownWithItsLocker(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		l := newLocker(t)
		rw := mustRW(t, l)
		_, err := rw.Reader().TryLock(ctx, "doc", time.Minute)
		wantNil(t, "Reader().TryLock(doc)", err)
		_, err = rw.Writer().TryLock(ctx, "log", time.Minute)
		wantNil(t, "Writer().TryLock(log)", err)

		wantNil(t, "locker.Shutdown()", l.Shutdown(ctx))
		fresh := mustRW(t, newLocker(t)) // another process's
		if held, err := fresh.Reader().IsLocked(ctx, "doc"); held || err != nil {
			t.Errorf("Reader().IsLocked(doc) after the locker's Shutdown = %v, %v; want false, nil", held, err)
		}
		if held, err := fresh.Writer().IsLocked(ctx, "log"); held || err != nil {
			t.Errorf("Writer().IsLocked(log) after the locker's Shutdown = %v, %v; want false, nil", held, err)
		}
		_, err = rw.Reader().TryLock(ctx, "doc", time.Minute)
		wantIs(t, "Reader().TryLock(doc) after its locker's Shutdown", err, lock.ErrClosed)
		_, err = rw.Writer().Lock(ctx, "doc", time.Minute)
		wantIs(t, "Writer().Lock(doc) after its locker's Shutdown", err, lock.ErrClosed)
	})
}

// A writer waiting for readers to leave, over a Locker of another package
// (whose shutdown the RWLocker cannot watch), ends with ErrClosed at its
// next attempt once that locker shuts down, as the RWLocker's
// documentation says: it waited on, its intent released by the shutdown,
// until the readers left or half its TTL had passed.
func TestRWLockerWaitingWriterEndsAtForeignLockersShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		inner := mustSingle(t, m, nil)
		rw := mustRW(t, sxForeign{inner})
		other := mustRW(t, sxForeign{mustSingle(t, m, nil)}) // another process's
		r, err := other.Reader().TryLock(ctx, "doc", time.Hour)
		wantNil(t, "other's Reader().TryLock(doc)", err)

		const delay = 10 * time.Millisecond
		done := make(chan error, 1)
		go func() {
			_, err := rw.Writer().Lock(ctx, "doc", time.Hour, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: delay}))
			done <- err
		}()
		synctest.Wait() // the writer holds its intent and waits for the reader
		wantNil(t, "locker.Shutdown()", inner.Shutdown(ctx))
		time.Sleep(delay) // the writer's next attempt
		synctest.Wait()
		select {
		case err := <-done:
			wantIs(t, "Writer().Lock(doc) waiting while its locker shut down", err, lock.ErrClosed)
		default:
			t.Fatalf("Writer().Lock(doc) waiting for a reader still waits a retry delay after its locker's Shutdown; want ErrClosed")
		}
		wantNil(t, "other's Reader().Unlock(r)", other.Reader().Unlock(ctx, r))
		noRW(t, []*memory.Store{m}, "doc")
	})
}
