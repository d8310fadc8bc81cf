package lock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// Zero lockers refuse every call with ErrInvalid, naming
// the constructor, instead of panicking.
func TestZeroLockersAreRefused(t *testing.T) {
	ctx := t.Context()
	held := lock.Lock{Resource: "r", Token: "t", ValidUntil: time.Now().Add(time.Hour)}
	lockers := map[string]struct {
		l    lock.Locker
		what string
	}{
		"SingleLocker":    {&lock.SingleLocker{}, "not made by"},
		"MultiLocker":     {&lock.MultiLocker{}, "not made by"},
		"Semaphore":       {&lock.Semaphore{}, "not made by"},
		"RWLocker.Reader": {(&lock.RWLocker{}).Reader(), "not made by"},
		"RWLocker.Writer": {(&lock.RWLocker{}).Writer(), "not made by"},
	}
	for name, tc := range lockers {
		t.Run(name, func(t *testing.T) {
			call := func(what string, f func() error) {
				t.Helper()
				var err error
				func() {
					defer func() {
						if r := recover(); r != nil {
							err = fmt.Errorf("panic: %v", r)
						}
					}()
					err = f()
				}()
				wantNotMade(t, what, err, tc.what)
			}
			call("Lock()", func() error { _, err := tc.l.Lock(ctx, "r", time.Second); return err })
			call("TryLock()", func() error { _, err := tc.l.TryLock(ctx, "r", time.Second); return err })
			call("IsLocked()", func() error { _, err := tc.l.IsLocked(ctx, "r"); return err })
			call("Extend()", func() error { _, err := tc.l.Extend(ctx, held, time.Second); return err })
			call("Unlock()", func() error { return tc.l.Unlock(ctx, held) })
			call("UnlockAll()", func() error { return tc.l.UnlockAll(ctx) })
			call("Shutdown()", func() error { return tc.l.Shutdown(context.Background()) })
			if h, ok := tc.l.(interface {
				Holder(context.Context, string) (string, bool, error)
			}); ok {
				call("Holder()", func() error { _, _, err := h.Holder(ctx, "r"); return err })
			}
			call("Run()", func() error {
				return lock.Run(ctx, tc.l, "r", time.Second, func(context.Context, lock.Lock) error { return nil })
			})
			call("NewElection()", func() error { _, err := lock.NewElection(tc.l, "r", time.Second); return err })
		})
	}
}

// A semaphore or a read-write lock over a zero locker is refused when it
// is made, as NewElection and Run refuse one, naming the constructor; it
// was made, and every call then failed.
func TestZeroLockerBaseRefused(t *testing.T) {
	for name, base := range map[string]lock.Locker{
		"SingleLocker":    &lock.SingleLocker{},
		"MultiLocker":     &lock.MultiLocker{},
		"Semaphore":       &lock.Semaphore{},
		"RWLocker.Writer": (&lock.RWLocker{}).Writer(),
	} {
		t.Run(name, func(t *testing.T) {
			sem, err := lock.NewSemaphore(base, 2)
			wantNotMade(t, fmt.Sprintf("NewSemaphore(zero %s, 2) = %v,", name, sem), err, "not made by")
			rw, err := lock.NewRWLocker(base)
			wantNotMade(t, fmt.Sprintf("NewRWLocker(zero %s) = %v,", name, rw), err, "not made by")
		})
	}
}
