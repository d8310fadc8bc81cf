package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// A --wait that runs out while a Redlock's first attempt is still under
// way (a slow store) is contention when a store answered that another
// owner holds the lock, and a failure otherwise.
func TestAcquireErrorDeadline(t *testing.T) {
	tf := &takeFlags{wait: waitValue{d: 300 * time.Millisecond}, conflictCode: exitConflict}
	held := &lock.Error{Op: "lock", Resource: "job", Err: context.DeadlineExceeded, Stores: []lock.StoreError{
		{Index: 0, Store: "a", Err: lock.ErrNotAcquired},
		{Index: 1, Store: "b", Err: errors.New("no answer within 2s")},
	}}
	slow := &lock.Error{Op: "lock", Resource: "job", Err: context.DeadlineExceeded, Stores: []lock.StoreError{
		{Index: 1, Store: "b", Err: errors.New("no answer within 2s")},
	}}
	for _, tc := range []struct {
		err  error
		want int
	}{{held, exitConflict}, {slow, exitFailure}} {
		if got := exitCode(acquireError(context.Background(), tc.err, "job", nil, tf, &waitHook{})); got != tc.want {
			t.Errorf("acquireError(%v) exits %d; want %d", tc.err, got, tc.want)
		}
	}
}
