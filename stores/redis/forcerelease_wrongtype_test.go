package redis_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

// TestForceReleaseWaitersWrongType: ForceRelease of a held resource whose
// waiters' queue key holds a value of another type (some other program's
// data) is a WRONGTYPE error that names the waiters' key, not the lock's,
// and leaves both keys as they were.
func TestForceReleaseWaitersWrongType(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv.NewClient(t), redis.WithPrefix("frwt:"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	lockKey, waitersKey := redisstore.LockAndWaiters("frwt:", "r")
	if err := srv.Do("SET", waitersKey, "not a queue").Error(); err != nil {
		t.Fatalf("SET %s: %v", waitersKey, err)
	}

	held, err := s.ForceRelease(ctx, "r")
	switch {
	case err == nil:
		t.Fatalf("ForceRelease(r) with a string at %s = %v, nil; want a WRONGTYPE error", waitersKey, held)
	case !strings.Contains(err.Error(), strconv.Quote(waitersKey)):
		t.Errorf("ForceRelease(r) with a string at %s = %v; want the error to name the waiters' key %q", waitersKey, err, waitersKey)
	case strings.Contains(err.Error(), strconv.Quote(lockKey)):
		t.Errorf("ForceRelease(r) with a string at %s = %v; want it not to blame the lock key %q", waitersKey, err, lockKey)
	}
	if held {
		t.Errorf("ForceRelease(r) that failed = true; want false")
	}
	if v, err := srv.Do("GET", waitersKey).ToString(); err != nil || v != "not a queue" {
		t.Errorf("GET %s after ForceRelease = %q, %v; want the string left alone", waitersKey, v, err)
	}
	if v, err := srv.Do("GET", lockKey).ToString(); err != nil || v != "holder" {
		t.Errorf("GET %s after the failed ForceRelease = %q, %v; want the lock left to its holder", lockKey, v, err)
	}
}
