package lock_test

// Elections against their doc comments.

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// NewElection refuses a retry policy that Lock would refuse, before
// anything is sent, rather than leaving every Campaign to fail with it.
func TestContractNewElectionRefusesBadRetry(t *testing.T) {
	c := newCounting("c")
	l := mustSingle(t, c, nil)
	for _, tc := range []struct {
		name string
		r    lock.Retry
	}{
		{"Attempts: -2", lock.Retry{Attempts: -2}},
		{"Attempts: 3, Delay: 0", lock.Retry{Attempts: 3}},
		{"Delay: -1s", lock.Retry{Attempts: 2, Delay: -time.Second}},
		{"MaxDelay below Delay", lock.Retry{Attempts: 2, Delay: time.Second, MaxDelay: time.Millisecond}},
	} {
		e, err := lock.NewElection(l, "role", time.Second, lock.WithRetry(tc.r))
		if !errors.Is(err, lock.ErrInvalid) || e != nil {
			t.Errorf("NewElection(WithRetry(%s)) = %v, %v; want nil, an error matching ErrInvalid", tc.name, e, err)
		}
	}
	if n := c.calls.Load(); n != 0 {
		t.Errorf("%d store calls after NewElection with bad options; want none", n)
	}
	if _, err := lock.NewElection(l, "role", time.Second, lock.WithRetry(lock.NoRetry)); err != nil {
		t.Errorf("NewElection(WithRetry(NoRetry)) = %v; want nil", err)
	}
}

