package lock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

func mustRW(t *testing.T, l lock.Locker) *lock.RWLocker {
	t.Helper()
	rw, err := lock.NewRWLocker(l)
	if err != nil {
		t.Fatalf("NewRWLocker(locker) = %v", err)
	}
	return rw
}

// noRW fails the test if anything of a read-write lock on resource is
// left (the readers' limit marker may stay until its TTL).
func noRW(t *testing.T, mems []*memory.Store, resource string) {
	t.Helper()
	noPermits(t, mems, resource+"~read")
}

func TestRWLockerSharedAndExclusive(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		rw := mustRW(t, newLocker(t))
		r1, err := rw.Reader().TryLock(ctx, "doc", time.Minute)
		wantNil(t, "Reader().TryLock(doc)", err)
		if r1.Resource != "doc" {
			t.Fatalf("Reader().TryLock(doc).Resource = %q; want doc", r1.Resource)
		}
		r2, err := rw.Reader().TryLock(ctx, "doc", time.Minute)
		wantNil(t, "Reader().TryLock(doc) while another reader holds it", err)
		_, err = rw.Writer().TryLock(ctx, "doc", time.Minute)
		wantIs(t, "Writer().TryLock(doc) while readers hold it", err, lock.ErrNotAcquired)
		if ok, err := rw.Writer().IsLocked(ctx, "doc"); ok || err != nil {
			t.Fatalf("Writer().IsLocked(doc) after a writer gave up = %v, %v; want false, nil: the writer's intent was left behind", ok, err)
		}
		wantNil(t, "Reader().Unlock(r1)", rw.Reader().Unlock(ctx, r1))
		wantNil(t, "Reader().Unlock(r2)", rw.Reader().Unlock(ctx, r2))
		w, err := rw.Writer().TryLock(ctx, "doc", time.Minute)
		wantNil(t, "Writer().TryLock(doc) once the readers left", err)
		_, err = rw.Reader().TryLock(ctx, "doc", time.Minute)
		wantIs(t, "Reader().TryLock(doc) while a writer holds it", err, lock.ErrNotAcquired)
		_, err = rw.Writer().TryLock(ctx, "doc", time.Minute)
		wantIs(t, "Writer().TryLock(doc) while a writer holds it", err, lock.ErrNotAcquired)
		if ok, err := rw.Writer().IsLocked(ctx, "doc"); !ok || err != nil {
			t.Fatalf("Writer().IsLocked(doc) = %v, %v; want true, nil", ok, err)
		}
		if extended, err := rw.Writer().Extend(ctx, w, time.Hour); !errors.Is(err, errors.ErrUnsupported) {
			wantNil(t, "Writer().Extend(w)", err)
			w = extended
		}
		wantNil(t, "Writer().Unlock(w)", rw.Writer().Unlock(ctx, w))
		r, err := rw.Reader().TryLock(ctx, "doc", time.Minute)
		wantNil(t, "Reader().TryLock(doc) after the writer left", err)
		wantNil(t, "Reader().UnlockAll()", rw.Reader().UnlockAll(ctx))
		wantIs(t, "Reader().Unlock(r) after UnlockAll", rw.Reader().Unlock(ctx, r), lock.ErrNotHeld)
		noRW(t, mems, "doc")
	})
}

// A writer waiting for a reader keeps new readers out, and gets the lock
// once the readers inside have left.
func TestRWLockerWriterNotStarved(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		rw := mustRW(t, newLocker(t))
		r1, err := rw.Reader().TryLock(ctx, "doc", time.Minute)
		wantNil(t, "Reader().TryLock(doc)", err)
		got := make(chan error, 1)
		var w lock.Lock
		go func() {
			var err error
			w, err = rw.Writer().Lock(ctx, "doc", time.Minute, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 10 * time.Millisecond}))
			got <- err
		}()
		synctest.Wait()
		// Readers keep coming while the writer waits: each is refused.
		for range 5 {
			_, err := rw.Reader().TryLock(ctx, "doc", time.Minute)
			wantIs(t, "Reader().TryLock(doc) while a writer waits", err, lock.ErrNotAcquired)
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case err := <-got:
			t.Fatalf("Writer().Lock(doc) while a reader holds it = %v; want it to wait", err)
		default:
		}
		wantNil(t, "Reader().Unlock(r1)", rw.Reader().Unlock(ctx, r1))
		wantNil(t, "Writer().Lock(doc) once the reader left", <-got)
		wantNil(t, "Writer().Unlock(w)", rw.Writer().Unlock(ctx, w))
		noRW(t, mems, "doc")
	})
}

// A writer that gives up (its context ends) takes its intent with it:
// readers get in again.
func TestRWLockerWriterGivesUp(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		rw := mustRW(t, newLocker(t))
		r1, err := rw.Reader().TryLock(ctx, "doc", time.Minute)
		wantNil(t, "Reader().TryLock(doc)", err)
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err = rw.Writer().Lock(wctx, "doc", time.Minute)
		wantIs(t, "Writer().Lock(doc) with a 1s deadline while a reader holds it", err, context.DeadlineExceeded)
		r2, err := rw.Reader().TryLock(ctx, "doc", time.Minute)
		wantNil(t, "Reader().TryLock(doc) after the writer gave up", err)
		wantNil(t, "Reader().Unlock(r1)", rw.Reader().Unlock(ctx, r1))
		wantNil(t, "Reader().Unlock(r2)", rw.Reader().Unlock(ctx, r2))
		noRW(t, mems, "doc")
	})
}

// Under contention, a writer is never inside with anyone, and readers
// are inside together.
func TestRWLockerContention(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		const workers, rounds = 6, 6
		ctx := t.Context()
		var readers, writers, mostReaders atomic.Int32
		var wg sync.WaitGroup
		retry := lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: time.Millisecond, MaxDelay: 20 * time.Millisecond})
		for i := range workers {
			rw := mustRW(t, newLocker(t))
			wg.Go(func() {
				for n := range rounds {
					write := (i+n)%3 == 0
					side := rw.Reader()
					if write {
						side = rw.Writer()
					}
					err := lock.Run(ctx, side, "doc", time.Minute, func(ctx context.Context, l lock.Lock) error {
						if write {
							if writers.Add(1) != 1 || readers.Load() != 0 {
								t.Errorf("a writer is inside with %d writers and %d readers", writers.Load(), readers.Load())
							}
							time.Sleep(5 * time.Millisecond)
							writers.Add(-1)
							return nil
						}
						r := readers.Add(1)
						for m := mostReaders.Load(); r > m && !mostReaders.CompareAndSwap(m, r); m = mostReaders.Load() {
						}
						if writers.Load() != 0 {
							t.Errorf("a reader is inside with a writer")
						}
						time.Sleep(5 * time.Millisecond)
						readers.Add(-1)
						return nil
					}, retry)
					if err != nil {
						t.Errorf("Run(doc, write=%v) = %v; want nil", write, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if mostReaders.Load() < 2 {
			t.Errorf("most readers inside at once = %d; want readers to share the lock", mostReaders.Load())
		}
		noRW(t, mems, "doc")
	})
}

func TestRWLockerBadInput(t *testing.T) {
	_, err := lock.NewRWLocker(nil)
	wantIs(t, "NewRWLocker(nil)", err, lock.ErrInvalid)
	rw := mustRW(t, mustSingle(t, memory.New(), nil))
	_, err = rw.Reader().TryLock(t.Context(), "", time.Minute)
	wantIs(t, `Reader().TryLock("")`, err, lock.ErrInvalid)
	_, err = rw.Writer().TryLock(t.Context(), "doc", 0)
	wantIs(t, "Writer().TryLock(doc, 0)", err, lock.ErrInvalid)
	err = rw.Writer().Unlock(t.Context(), lock.Lock{})
	wantIs(t, "Writer().Unlock(zero Lock)", err, lock.ErrInvalid)
}
