package memory

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// An Extend (or ExtendPermit) that waits for its shard's mutex while the
// lock expires must find it expired: it never re-creates an expired lock;
// an AcquirePermit that waits so must not count the expired permit.
// The test holds the mutex itself, so it runs in real time (a goroutine
// blocked on a mutex is not durably blocked, and a synctest bubble's
// clock would stand still); the wait past the TTL is not a threshold: a
// slow machine can only make the check weaker, never fail a correct store.
func TestCallWaitingForTheMutexSeesExpiry(t *testing.T) {
	const ttl = 20 * time.Millisecond
	for _, c := range []struct {
		name, fn string
		take     func(s *Store) error
		extend   func(s *Store) error
		want     error // what the second call must return once r has expired
	}{
		{"Extend", "applyExtend",
			func(s *Store) error { return s.Acquire(t.Context(), "r", "a", ttl) },
			func(s *Store) error { return s.Extend(context.Background(), "r", "a", time.Hour) }, lock.ErrNotHeld},
		{"ExtendPermit", "onPermit",
			func(s *Store) error { _, err := s.AcquirePermit(t.Context(), "r", "a", 1, ttl); return err },
			func(s *Store) error { return s.ExtendPermit(context.Background(), "r", "a", time.Hour) }, lock.ErrNotHeld},
		// An AcquirePermit let through after the only permit expired must
		// not count it.
		{"AcquirePermit", "applyAcquirePermit",
			func(s *Store) error { _, err := s.AcquirePermit(t.Context(), "r", "a", 1, ttl); return err },
			func(s *Store) error {
				_, err := s.AcquirePermit(context.Background(), "r", "b", 1, time.Hour)
				return err
			}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New()
			done := make(chan error, 1)
			holdShardPastExpiry(t, s, ttl, c.take, c.fn, func() { done <- c.extend(s) })
			switch err := <-done; {
			case c.want == nil && err != nil:
				t.Fatalf("%s(r, b, 1h), begun while a held r and let through after r expired = %v; want nil: an expired permit does not count", c.name, err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("%s(r, a, 1h), begun while a held r and let through after r expired = %v; want ErrNotHeld: an expired lock is never re-created", c.name, errString(err))
			}
		})
	}
}

// holdShardPastExpiry takes r in s with take, for ttl, and starts call
// in a goroutine while it holds r's shard mutex; once call is blocked on
// that mutex in fn and r has expired, it lets call through and returns.
// It waits for r's expiry in real time, for the reason
// TestCallWaitingForTheMutexSeesExpiry gives.
func holdShardPastExpiry(t *testing.T, s *Store, ttl time.Duration, take func(*Store) error, fn string, call func()) {
	t.Helper()
	set := time.Now()
	if err := take(s); err != nil {
		t.Fatalf("taking r under a for %v = %v", ttl, err)
	}
	sh := s.shard("r")
	sh.mu.Lock()
	go call()
	waitBlockedOnMutex(t, fn)
	time.Sleep(time.Until(set.Add(2 * ttl))) // r has expired
	sh.mu.Unlock()
}

// waitBlockedOnMutex waits until a goroutine is blocked on a mutex in fn.
func waitBlockedOnMutex(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	give := time.Now().Add(30 * time.Second) // not a threshold: only how long before the test says it hung
	for {
		stacks := string(buf[:runtime.Stack(buf, true)])
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "sync.(*Mutex).Lock") && strings.Contains(g, "memory.(*Store)."+fn) {
				return
			}
		}
		if time.Now().After(give) {
			t.Fatalf("no goroutine blocked on the shard's mutex in %s after 30s", fn)
		}
		runtime.Gosched()
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
