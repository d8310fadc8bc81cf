package lock_test

// Black-box audit of the lockers' edges: huge retry delays, typed nil
// options, names the stores refuse on Unlock and Extend, and what
// FromContext reports once Run's lock is lost.

import (
	"context"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
)

// alwaysHeld is a store whose every resource is held by another owner.
type alwaysHeld struct{}

func (alwaysHeld) Acquire(context.Context, string, string, time.Duration) error {
	return lock.ErrNotAcquired
}
func (alwaysHeld) Release(context.Context, string, string) error { return lock.ErrNotHeld }
func (alwaysHeld) Exists(context.Context, string) (bool, error)  { return true, nil }

// Backoff doubles the delay up to MaxDelay whatever the durations: a
// doubling past the largest Duration must not wrap round to a negative
// wait (which made Lock panic in rand.Int64N).
func TestAuditRetryBackoffSaturates(t *testing.T) {
	for _, r := range []lock.Retry{
		{Attempts: 4, Delay: math.MaxInt64 / 3, MaxDelay: math.MaxInt64},
		{Attempts: 70, Delay: time.Hour, MaxDelay: math.MaxInt64},
	} {
		t.Run(fmt.Sprint(r.Attempts), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				locker := mustSingle(t, alwaysHeld{}, nil)
				call := fmt.Sprintf("Lock(WithRetry(%+v))", r)
				var err error
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("%s panicked: %v; want ErrNotAcquired", call, p)
						}
					}()
					_, err = locker.Lock(context.Background(), "r", time.Hour, lock.WithRetry(r))
				}()
				wantIs(t, call, err, lock.ErrNotAcquired)
			})
		})
	}
}
