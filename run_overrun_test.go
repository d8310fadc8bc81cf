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

// A function that ignores ctx's cancellation, which stops the extensions,
// and runs past the lock's validity has lost the lock while it ran: Run
// reports ErrLost (and the hook EventLost), and the release finding the
// lock not held is no further error.
func TestRunCanceledFunctionOutlivingItsLockIsLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, l lock.Locker, fn func(context.Context, lock.Lock) error) error
	}{
		{"Run", func(ctx context.Context, l lock.Locker, fn func(context.Context, lock.Lock) error) error {
			return lock.Run(ctx, l, "res", 300*time.Millisecond, fn)
		}},
		{"RunOnce", func(ctx context.Context, l lock.Locker, fn func(context.Context, lock.Lock) error) error {
			return lock.RunOnce(ctx, l, "res", 300*time.Millisecond, fn)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := memory.New()
				rec := &bbRecorder{}
				l := mustSingle(t, m, &lock.Options{Hook: rec})
				ctx, cancel := context.WithCancel(t.Context())
				err := tc.run(ctx, l, func(fctx context.Context, held lock.Lock) error {
					cancel()
					<-fctx.Done()
					time.Sleep(time.Until(held.ValidUntil) + time.Second) // ignores the cancellation
					if fl, _ := lock.FromContext(fctx); fl.Valid() {
						t.Errorf("FromContext after the validity ran out: Valid() = true; want false")
					}
					return nil
				})
				wantIs(t, tc.name+"(canceled; fn outlives the lock)", err, lock.ErrLost)
				if bbHasOp(err, "unlock") {
					t.Errorf("%s = %v; the release finding a lost lock not held is no further error", tc.name, err)
				}
				if n := len(rec.ofKind(lock.EventLost)); n != 1 {
					t.Errorf("%d EventLost for a lock that ran out while fn ran; want 1", n)
				}
				noResidue(t, m)
			})
		})
	}
}

// Cancellation alone is no loss: a function that returns within the
// lock's validity after ctx is canceled gets its own error back.
func TestRunCanceledFunctionReturningInTimeIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		rec := &bbRecorder{}
		l := mustSingle(t, m, &lock.Options{Hook: rec})
		ctx, cancel := context.WithCancel(t.Context())
		err := lock.Run(ctx, l, "res", 300*time.Millisecond, func(fctx context.Context, held lock.Lock) error {
			time.Sleep(150 * time.Millisecond) // past the first extension
			cancel()
			<-fctx.Done()
			time.Sleep(time.Until(held.ValidUntil) / 2)
			return fctx.Err()
		})
		if !errors.Is(err, context.Canceled) || errors.Is(err, lock.ErrLost) {
			t.Errorf("Run(canceled; fn returns in time) = %v; want context.Canceled, not ErrLost", err)
		}
		if n := len(rec.ofKind(lock.EventLost)); n != 0 {
			t.Errorf("%d EventLost for a lock released in time; want 0", n)
		}
		noResidue(t, m)
		time.Sleep(time.Second) // no loss reported once Run returned
		if n := len(rec.ofKind(lock.EventLost)); n != 0 {
			t.Errorf("%d EventLost after Run returned; want 0", n)
		}
	})
}

// A Run inside a Run whose lock is lost: the inner lock was not lost, and
// the inner Run does not report the outer loss as its own.
func TestRunInsideALostRunReportsItsOwnLockOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		var inner error
		outer := lock.Run(t.Context(), l, "outer", 300*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
			inner = lock.Run(ctx, l, "inner", 300*time.Millisecond, func(ictx context.Context, _ lock.Lock) error {
				m.Expire("outer")
				<-ictx.Done()
				if !errors.Is(context.Cause(ictx), lock.ErrLost) {
					t.Errorf("inner fn's context cause = %v; want the outer loss (it ends with ctx)", context.Cause(ictx))
				}
				return nil
			})
			return nil
		})
		wantIs(t, "outer Run() after its lock was lost", outer, lock.ErrLost)
		wantNil(t, "inner Run() whose own lock was released in time", inner)
		noResidue(t, m)
	})
}

// Over a store that cannot extend, MaxHold shorter than the validity ends
// fn's context with ErrMaxHold; the lock then runs out at its validity,
// which is no loss: no EventLost, no ErrLost, also when fn outlives it.
func TestRunMaxHoldWithoutExtenderIsNoLoss(t *testing.T) {
	for _, outlive := range []bool{false, true} {
		name := "fn returns at the hold limit"
		if outlive {
			name = "fn outlives the lock"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &bbRecorder{}
				m := memory.New()
				l := mustSingle(t, basic{m}, &lock.Options{Hook: rec})
				var returned time.Time
				err := lock.Run(t.Context(), l, "res", 3*time.Second, func(ctx context.Context, held lock.Lock) error {
					<-ctx.Done()
					if outlive {
						time.Sleep(time.Until(held.ValidUntil) + time.Second)
					}
					returned = time.Now()
					return nil
				}, lock.MaxHold(time.Second))
				if !errors.Is(err, lock.ErrMaxHold) || errors.Is(err, lock.ErrLost) || bbHasOp(err, "unlock") {
					t.Errorf("Run(MaxHold 1s, no Extender) = %v; want ErrMaxHold alone", err)
				}
				time.Sleep(5 * time.Second) // past the lock's validity
				if lost := rec.ofKind(lock.EventLost); len(lost) != 0 {
					t.Errorf("EventLost %v after MaxHold gave the lock up (fn returned at %v); want none", lost[0].Err, returned)
				}
				noResidue(t, m)
			})
		})
	}
}
