package lock_test

import (
	"errors"
	"testing"

	"github.com/lockkit/lock"
)

// "Do runs write if fence is at least the highest fence Do has let write
// to key, and records fence as the highest": a write that ran and failed
// was let write, so a lower fence is refused after it; and a write that
// panics leaves the key usable (writes to one key run one at a time, but
// a panic does not hold the next one up).
func TestContractFenceGuardAfterAFailedOrPanickingWrite(t *testing.T) {
	var g lock.FenceGuard
	nop := func() error { return nil }
	errWrite := errors.New("disk full")
	if err := g.Do("k", 5, func() error { return errWrite }); err != errWrite {
		t.Errorf("Do(k, 5, failing write) = %v; want write's error %v", err, errWrite)
	}
	wantIs(t, "Do(k, 4) after a failed write with fence 5", g.Do("k", 4, nop), lock.ErrStaleFence)

	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("Do(k, 6, panicking write) recovered %v; want the write's panic to reach the caller", p)
			}
		}()
		_ = g.Do("k", 6, func() error { panic("boom") })
	}()
	wantIs(t, "Do(k, 5) after a write with fence 6 panicked", g.Do("k", 5, nop), lock.ErrStaleFence)
	wantNil(t, "Do(k, 6) after a write with fence 6 panicked", g.Do("k", 6, nop))
}
