package goredis_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/goredis"
)

// TestRestartGuard: a server the guard has not seen grants nothing until
// the maximum TTL has passed — as an error matching ErrRecovering and
// lock.ErrUnavailable, never lock.ErrNotAcquired — then grants as usual,
// and grants nothing again once it lost its data.
func TestRestartGuard(t *testing.T) {
	srv := redistest.Start(t)
	const maxTTL = 300 * time.Millisecond
	s := newStore(t, clientOf(t, srv), goredis.WithRestartGuard(maxTTL))
	ctx := ctxFor(t, 30*time.Second)
	recovering := func(call string, err error) {
		t.Helper()
		if !errors.Is(err, goredis.ErrRecovering) || !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("%s on a server the guard has not seen = %v; want ErrRecovering", call, err)
		}
	}
	recovering("Acquire", s.Acquire(ctx, "r", "tok", time.Second))
	_, err := s.AcquireFenced(ctx, "r", "tok", time.Second)
	recovering("AcquireFenced", err)
	if v, err := srv.Do("GET", goredis.GuardKey).ToString(); err != nil || v == "" {
		t.Fatalf("marker %s = %q, %v; want the server time the guard first saw it", goredis.GuardKey, v, err)
	}
	var fence uint64
	deadline := time.Now().Add(10 * time.Second)
	for {
		fence, err = s.AcquireFenced(ctx, "r", "tok", time.Minute)
		if !errors.Is(err, goredis.ErrRecovering) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || fence == 0 {
		t.Fatalf("AcquireFenced once the guard's maxTTL has passed = %d, %v; want a fence", fence, err)
	}
	if err := s.Acquire(ctx, "r", "other", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("Acquire of a held lock under the guard = %v; want lock.ErrNotAcquired", err)
	}
	if err := srv.Do("FLUSHALL").Error(); err != nil {
		t.Fatal(err)
	}
	recovering("Acquire after FLUSHALL", s.Acquire(ctx, "r", "tok", time.Second))
}
