package lock_test

// What Run and RunOnce return, against their doc comments: the release's
// error, a shut locker, a context that ended, a store failure that must
// not pass for a skip.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Run returns fn's error joined with Unlock's when the release fails; the
// lock was not lost.
func TestContractRunReportsAFailedRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		errFn := errors.New("fn failed")
		err := lock.Run(t.Context(), mustSingle(t, m, nil), "r", time.Minute, func(context.Context, lock.Lock) error {
			m.Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, Times: memory.Always})
			return errFn
		})
		wantIs(t, "Run() with the release failing", err, errFn)
		wantIs(t, "Run() with the release failing", err, lock.ErrUnavailable)
		if errors.Is(err, lock.ErrLost) {
			t.Errorf("Run() with the release failing = %v; want no ErrLost: the lock was not lost", err)
		}
		m.ClearFaults()
	})
}

// After Shutdown, Run and RunOnce return Lock's and TryLock's ErrClosed
// without running fn.
func TestContractRunOnAShutLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustSingle(t, memory.New(), nil)
		wantNil(t, "Shutdown()", l.Shutdown(t.Context()))
		fn := func(context.Context, lock.Lock) error { t.Error("fn ran on a shut locker"); return nil }
		wantIs(t, "Run() after Shutdown", lock.Run(t.Context(), l, "r", time.Minute, fn), lock.ErrClosed)
		err := lock.RunOnce(t.Context(), l, "job", time.Minute, fn)
		wantIs(t, "RunOnce() after Shutdown", err, lock.ErrClosed)
		if errors.Is(err, lock.ErrSkipped) {
			t.Errorf("RunOnce() after Shutdown = %v; want no skip", err)
		}
	})
}

// RunOnce whose context has ended reports the context's error, not a
// skip: nobody else was found running the job.
func TestContractRunOnceCanceledIsNotASkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustSingle(t, memory.New(), nil)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := lock.RunOnce(ctx, l, "job", time.Minute, func(context.Context, lock.Lock) error {
			t.Error("fn ran with its context canceled")
			return nil
		})
		wantIs(t, "RunOnce(canceled ctx)", err, context.Canceled)
		if errors.Is(err, lock.ErrSkipped) || errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("RunOnce(canceled ctx) = %v; want no skip", err)
		}
	})
}

// On a MultiLocker, a store failure that leaves the quorum undecided is
// ErrUnavailable, even beside a store another holds: whether someone runs
// the job is unknown. Refusals that rule the quorum out are a skip.
func TestContractRunOnceMultiFailureIsNotASkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms, ls := memStores(3)
		m := mustMulti(t, ls, nil)
		_, err := mustSingle(t, ms[0], nil).TryLock(t.Context(), "job", time.Minute)
		wantNil(t, "TryLock(job) on m0", err)
		ms[1].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})
		fn := func(context.Context, lock.Lock) error { t.Error("the job ran without a quorum"); return nil }
		err = lock.RunOnce(t.Context(), m, "job", time.Minute, fn)
		wantIs(t, "RunOnce() with m0 held and m1 failing", err, lock.ErrUnavailable)
		if errors.Is(err, lock.ErrSkipped) {
			t.Errorf("RunOnce() with m0 held and m1 failing = %v; want no skip", err)
		}

		_, err = mustSingle(t, ms[1], nil).TryLock(t.Context(), "job", time.Minute)
		wantNil(t, "TryLock(job) on m1", err)
		ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})
		err = lock.RunOnce(t.Context(), m, "job", time.Minute, fn)
		wantIs(t, "RunOnce() with m0 and m1 held, m2 failing", err, lock.ErrSkipped)
	})
}

// UnlockAll while RunOnce's job runs ends the job's context with ErrLost
// before the release, and RunOnce reports the loss.
func TestContractRunOnceUnlockAllEndsTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		err := lock.RunOnce(t.Context(), l, "job", time.Minute, func(ctx context.Context, _ lock.Lock) error {
			wantNil(t, "UnlockAll()", l.UnlockAll(context.Background()))
			if ctx.Err() == nil {
				t.Error("job's context after UnlockAll: not ended")
			}
			wantIs(t, "job's cause after UnlockAll", context.Cause(ctx), lock.ErrLost)
			return nil
		}, lock.MinInterval(time.Hour))
		wantIs(t, "RunOnce() whose lock UnlockAll released", err, lock.ErrLost)
		noResidue(t, m)
	})
}

// "Every replica tries, one runs the job, the others skip it": replicas
// on lockers of their own, at once, with a MinInterval that outlasts the
// test so that the order of their attempts does not matter.
func TestContractRunOnceOneOfManyRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		const replicas = 8
		var ran atomic.Int32
		errs := make(chan error, replicas)
		for range replicas {
			l := mustSingle(t, m, nil)
			go func() {
				errs <- lock.RunOnce(t.Context(), l, "job", time.Minute, func(context.Context, lock.Lock) error {
					ran.Add(1)
					return nil
				}, lock.MinInterval(time.Hour))
			}()
		}
		skipped := 0
		for range replicas {
			switch err := <-errs; {
			case errors.Is(err, lock.ErrSkipped):
				skipped++
			case err != nil:
				t.Errorf("RunOnce() = %v; want nil or ErrSkipped", err)
			}
		}
		if n := ran.Load(); n != 1 || skipped != replicas-1 {
			t.Errorf("%d replicas calling RunOnce(job, MinInterval(1h)) at once: %d ran the job, %d skipped; want 1 and %d", replicas, n, skipped, replicas-1)
		}
	})
}
