package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A store reporting context.DeadlineExceeded while the caller's context is
// alive timed out on its own: the locker's error must not claim that the
// caller's deadline passed.
func TestMultiStoreDeadlineIsNotTheCallers(t *testing.T) {
	stores := []*memory.Store{memory.New(), memory.New(), memory.New()}
	for _, s := range stores[:2] {
		s.Inject(memory.Fault{Ops: memory.OpAcquire, Err: context.DeadlineExceeded})
	}
	l, err := lock.NewMulti([]lock.Store{stores[0], stores[1], stores[2]}, &lock.Options{StoreTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.TryLock(context.Background(), "r", time.Minute)
	if !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryLock with 2 of 3 stores reporting DeadlineExceeded = %v; want ErrUnavailable, not context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "no answer within 1s") {
		t.Errorf("TryLock error %q does not say the stores timed out", err)
	}
}
