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

// MaxHold bounds how long the lock is kept for the job while it runs;
// MinInterval then keeps it, with nobody acting under it, to the
// interval's end, however much longer than MaxHold that is: a job that
// returned before the hold limit, and one that the limit ended, are both
// skipped by the other replicas until the interval's end.
func TestRunOnceMinIntervalBeyondMaxHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  func(ctx context.Context) error
		want error // the cause RunOnce reports, if any
	}{
		{"returned before MaxHold", func(context.Context) error { time.Sleep(time.Second); return nil }, nil},
		{"ended by MaxHold", func(ctx context.Context) error { <-ctx.Done(); return nil }, lock.ErrMaxHold},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := memory.New()
				a, b := mustSingle(t, m, nil), mustSingle(t, m, nil)
				ctx := t.Context()
				start := time.Now()
				var jobCtx context.Context
				err := lock.RunOnce(ctx, a, "job", time.Second, func(ctx context.Context, _ lock.Lock) error {
					jobCtx = ctx
					return tc.job(ctx)
				}, lock.MaxHold(2*time.Second), lock.MinInterval(10*time.Second))
				if tc.want == nil {
					wantNil(t, "RunOnce()", err)
				} else {
					wantIs(t, "RunOnce()", err, tc.want)
				}
				if l, _ := lock.FromContext(jobCtx); l.Valid() {
					t.Errorf("FromContext(job's ctx) after RunOnce = %+v, valid; want the lock no longer the job's", l)
				}
				time.Sleep(5*time.Second - time.Since(start))
				err = lock.RunOnce(ctx, b, "job", time.Second, func(context.Context, lock.Lock) error { return nil })
				wantIs(t, "RunOnce() 5s after the run began, past MaxHold, within MinInterval", err, lock.ErrSkipped)
				time.Sleep(10*time.Second - time.Since(start))
				wantNil(t, "RunOnce() at the interval's end", lock.RunOnce(ctx, b, "job", time.Second, func(context.Context, lock.Lock) error { return nil }))
				noResidue(t, m)
			})
		})
	}
}

// A job that outlived MaxHold and its lock, which the hold limit left to
// run out, returns before MinInterval's end: the lock cannot be kept, and
// RunOnce reports the hold limit, as Run does; the extension that finds
// the lock run out is no further error (ErrNotHeld), as Run's release is
// not.
func TestRunOnceMaxHoldOutlivedThenMinInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		err := lock.RunOnce(t.Context(), l, "job", time.Second, func(ctx context.Context, _ lock.Lock) error {
			<-ctx.Done()
			time.Sleep(3 * time.Second) // ignores its context, past the lock's TTL
			return nil
		}, lock.MaxHold(2*time.Second), lock.MinInterval(10*time.Second))
		wantIs(t, "RunOnce()", err, lock.ErrMaxHold)
		if errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("RunOnce() whose job outlived MaxHold and its lock = %v; want no ErrNotHeld, as Run reports none", err)
		}
		noResidue(t, m)
	})
}

// A job that panics still ran: MinInterval keeps its lock to the
// interval's end, and the panic goes on to RunOnce's caller.
func TestRunOnceMinIntervalAfterPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		a, b := mustSingle(t, m, nil), mustSingle(t, m, nil)
		ctx := t.Context()
		start := time.Now()
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("RunOnce of a panicking job returned; want the panic")
				}
			}()
			_ = lock.RunOnce(ctx, a, "job", time.Second, func(context.Context, lock.Lock) error {
				panic("job failed")
			}, lock.MinInterval(10*time.Second))
		}()
		time.Sleep(5*time.Second - time.Since(start))
		err := lock.RunOnce(ctx, b, "job", time.Second, func(context.Context, lock.Lock) error { return nil })
		wantIs(t, "RunOnce() 5s after a run whose job panicked, within MinInterval", err, lock.ErrSkipped)
		time.Sleep(10*time.Second - time.Since(start))
		wantNil(t, "RunOnce() at the interval's end", lock.RunOnce(ctx, b, "job", time.Second, func(context.Context, lock.Lock) error { return nil }))
		noResidue(t, m)
	})
}
