package lock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A TryLock that Shutdown ends after the store granted the lock releases
// it as a cleanup call, bounded by the store timeout (Options.StoreTimeout
// "also bounds the cleanup calls made after an ambiguous outcome or a
// cancellation"): a release that hangs must not hold the call past its
// context and that bound.
func TestClosedMeanwhileReleaseIsBounded(t *testing.T) {
	for _, name := range []string{"single", "semaphore", "writer"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ms := memory.New()
				base := mustSingle(t, basic{ms}, nil) // plain locks: the semaphore takes slots
				var l lock.Locker = base
				resource := "r"
				switch name {
				case "semaphore":
					sem, err := lock.NewSemaphore(base, 2)
					wantNil(t, "NewSemaphore", err)
					l = sem
				case "writer":
					rw, err := lock.NewRWLocker(base)
					wantNil(t, "NewRWLocker", err)
					l = rw.Writer()
				}
				// The acquisition is granted 5ms in; the release that
				// follows hangs (a dead connection), for an hour.
				ms.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 5 * time.Millisecond})
				ms.Inject(memory.Fault{Ops: memory.OpRelease, Delay: time.Hour})
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
				defer cancel()
				shut := make(chan error, 1)
				go func() {
					time.Sleep(time.Millisecond) // Shutdown while the acquisition is on its way
					shut <- base.Shutdown(t.Context())
				}()
				start := time.Now()
				_, err := l.TryLock(ctx, resource, time.Minute)
				took := time.Since(start)
				// The context's 20ms, and one store timeout (50ms) for the
				// cleanup release.
				if bound := 20*time.Millisecond + 50*time.Millisecond; took > bound {
					t.Errorf("TryLock(r) returned after %v; want at most %v (its context, then a cleanup release bounded by the store timeout)", took, bound)
				}
				// A derived locker's call outlives its context's end, and
				// may report that instead.
				if !errors.Is(err, lock.ErrClosed) && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("TryLock(r) ended by Shutdown after the store granted it = %v; want an error matching ErrClosed or DeadlineExceeded", err)
				}
				wantNil(t, "Shutdown", <-shut)
				ms.ClearFaults()
			})
		})
	}
}

// A writer's Lock whose context ends while readers hold the resource gives
// its intent back as a cleanup call after a cancellation, which the store
// timeout bounds (Options.StoreTimeout): a release that hangs must not
// hold the caller for up to the intent's TTL. So for a semaphore of plain
// locks giving back a slot after a limit mismatch.
func TestGiveBackIsBounded(t *testing.T) {
	t.Run("writer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ms := memory.New()
			rw, err := lock.NewRWLocker(mustSingle(t, ms, nil))
			wantNil(t, "NewRWLocker", err)
			ctx := t.Context()
			reader, err := rw.Reader().Lock(ctx, "r", time.Minute)
			wantNil(t, "Reader().Lock(r)", err)
			// The writer's first release, its intent's, hangs.
			ms.Inject(memory.Fault{Ops: memory.OpRelease, Delay: time.Hour})
			wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err = rw.Writer().Lock(wctx, "r", time.Minute)
			took := time.Since(start)
			wantIs(t, "Writer().Lock(r) while a reader holds it", err, context.DeadlineExceeded)
			if bound := 20*time.Millisecond + 50*time.Millisecond; took > bound {
				t.Errorf("Writer().Lock(r) returned after %v; want at most %v (its context, then a cleanup release bounded by the store timeout)", took, bound)
			}
			ms.ClearFaults()
			wantNil(t, "Reader().Unlock", rw.Reader().Unlock(ctx, reader))
		})
	})
	t.Run("semaphore", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ms := memory.New()
			base := mustSingle(t, noWaitStore{ms, ms, ms, ms}, nil) // plain locks that can be extended
			ctx := t.Context()
			// Another limit's marker is held: the slot taken is given back.
			if err := ms.Acquire(ctx, "r~limit", "lockkit-semaphore-limit-3", time.Minute); err != nil {
				t.Fatalf("Acquire(r~limit) = %v", err)
			}
			sem, err := lock.NewSemaphore(base, 2)
			wantNil(t, "NewSemaphore", err)
			ms.Inject(memory.Fault{Ops: memory.OpRelease, Delay: time.Hour})
			start := time.Now()
			_, err = sem.TryLock(ctx, "r", time.Minute)
			took := time.Since(start)
			if bound := 50 * time.Millisecond; took > bound {
				t.Errorf("TryLock(r) returned after %v; want at most %v (a cleanup release bounded by the store timeout)", took, bound)
			}
			wantIs(t, "TryLock(r) of limit 2 while limit 3's marker is held", err, lock.ErrLimitMismatch)
			ms.ClearFaults()
		})
	})
}

// A MultiLocker's Lock whose context ends while a fence raise it needs is
// under way returns within two store timeouts of that end (the
// MultiLocker doc): the raise runs to its store timeout whatever the
// context does, then the failed attempt's releases are bounded by
// another. Here raises and releases hang for an hour.
func TestMultiLockRaiseIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		var stores []lock.Store
		var mems []*memory.Store
		for range 3 {
			m := memory.New()
			mems, stores = append(mems, m), append(stores, m)
		}
		// The first store's fences run ahead: the next lock's fence must
		// be raised on the others before it is granted.
		for range 3 {
			_, err := mems[0].AcquireFenced(ctx, "r", "old", time.Minute)
			wantNil(t, "AcquireFenced", err)
			wantNil(t, "Release", mems[0].Release(ctx, "r", "old"))
		}
		l := mustMulti(t, stores, nil)
		// The others answer a moment later, so that the first store's
		// fence decides the lock's: while faults are injected, memory
		// stores answer from goroutines of their own, and two others
		// answering first would grant the lock at once, with no raise.
		for _, m := range mems[1:] {
			m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Millisecond})
		}
		for _, m := range mems {
			m.Inject(memory.Fault{Ops: memory.OpRaiseFence | memory.OpRelease, Delay: time.Hour})
		}
		lctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := l.Lock(lctx, "r", time.Minute)
		took := time.Since(start)
		if bound := 20*time.Millisecond + 2*50*time.Millisecond; took > bound {
			t.Errorf("Lock(r) returned %v after its context's 20ms; want at most %v (two store timeouts after the context ended)", took, bound)
		}
		if err == nil {
			t.Errorf("Lock(r) with every raise hanging = nil; want an error")
		}
		for _, m := range mems {
			m.ClearFaults()
		}
		time.Sleep(time.Second) // background releases end
	})
}
