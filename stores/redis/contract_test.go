package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

// TestContractWrongTypeIsNotContention: "A lock key holding something other
// than a string ... is reported as a WRONGTYPE error, never as
// contention", and the lockers report it as a failure.
func TestContractWrongTypeIsNotContention(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	s := newStore(t, srv.NewClient(t), redis.WithPrefix("rv:"))
	if err := srv.Do("RPUSH", "rv:{r}", "x").Error(); err != nil {
		t.Fatal(err)
	}
	for _, fenced := range []bool{false, true} {
		var err error
		if fenced {
			_, err = s.AcquireFenced(ctx, "r", "tok", time.Second)
		} else {
			err = s.Acquire(ctx, "r", "tok", time.Second)
		}
		if err == nil || errors.Is(err, lock.ErrNotAcquired) || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Errorf("Acquire (fenced %v) on a list key = %v; want a WRONGTYPE error, not contention", fenced, err)
		}
	}
	if err := s.Release(ctx, "r", "tok"); err == nil || errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release on a list key = %v; want an error other than ErrNotHeld", err)
	}
	if err := s.Extend(ctx, "r", "tok", time.Second); err == nil || errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Extend on a list key = %v; want an error other than ErrNotHeld", err)
	}
	l, _ := lock.NewSingle(s, nil)
	_, err := l.TryLock(ctx, "r", time.Second)
	if !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("TryLock on a list key = %v; want ErrUnavailable", err)
	}
	if n, _ := srv.Do("LLEN", "rv:{r}").AsInt64(); n != 1 {
		t.Errorf("the list key was changed: LLEN %d", n)
	}
}
