package memory

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// A WaitRelease or WaitPermit that waits for its shard's mutex while the
// lock (or the only permit) expires finds it free once it gets the mutex,
// and returns at once: it does not get in line and sleep on for as long
// as it waited for the mutex, as it did when it read the clock before
// taking the mutex. The test holds the mutex itself, so it runs in real
// time, as TestCallWaitingForTheMutexSeesExpiry does; a slow machine can
// only make the check weaker, never fail a correct store.
func TestWaitWaitingForTheMutexSeesExpiry(t *testing.T) {
	const ttl = 50 * time.Millisecond
	for _, c := range []struct {
		name, fn string
		take     func(s *Store) error
		wait     func(s *Store) error
		inLine   func(sh *shard) int // the callers in line on r; called with sh.mu held
	}{
		{"WaitRelease", "WaitRelease",
			func(s *Store) error { return s.Acquire(context.Background(), "r", "a", ttl) },
			func(s *Store) error { return s.WaitRelease(context.Background(), "r") },
			func(sh *shard) int {
				if q := sh.waiters["r"]; q != nil {
					return len(q.waiters)
				}
				return 0
			}},
		{"WaitPermit", "WaitPermit",
			func(s *Store) error {
				_, err := s.AcquirePermit(context.Background(), "r", "a", 1, ttl)
				return err
			},
			func(s *Store) error { return s.WaitPermit(context.Background(), "r") },
			func(sh *shard) int {
				if p := sh.permits.sets["r"]; p != nil {
					return len(p.waiting.waiters)
				}
				return 0
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New()
			done := make(chan error, 1)
			holdShardPastExpiry(t, s, ttl, c.take, c.fn, func() { done <- c.wait(s) })
			sh := s.shard("r")
			for {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("%s(r), begun while a held r and let through after r expired = %v; want nil", c.name, err)
					}
					return
				default:
				}
				sh.mu.Lock()
				n := c.inLine(sh)
				sh.mu.Unlock()
				if n != 0 {
					t.Fatalf("%s(r), begun while a held r and let through after r expired, got in line (%d waiting); want it to return at once: r is free", c.name, n)
				}
				runtime.Gosched()
			}
		})
	}
}

// Resources, let through a shard's mutex after a lock of that shard
// expired, does not report it: it reads the clock once it holds each
// shard, as the other calls do.
func TestResourcesWaitingForTheMutexSeesExpiry(t *testing.T) {
	const ttl = 50 * time.Millisecond
	s := New()
	take := func(s *Store) error { return s.Acquire(context.Background(), "r", "a", ttl) }
	done := make(chan []string, 1)
	holdShardPastExpiry(t, s, ttl, take, "Resources", func() { done <- s.Resources() })
	if got := <-done; len(got) != 0 {
		t.Fatalf("Resources(), let through r's shard after r expired = %q; want none", got)
	}
}

// The package doc's design: a shard sweeps out its free entries as it
// grows, so that its map stays bounded by the live locks however many
// names were locked once.
func TestDocMemoryBoundedByLiveLocks(t *testing.T) {
	ctx := context.Background()
	s := New()
	for i := range 1000 {
		if err := s.Acquire(ctx, fmt.Sprint("held", i), "a", time.Hour); err != nil {
			t.Fatalf("Acquire(held%d, a) = %v", i, err)
		}
	}
	for i := range 100_000 {
		r := fmt.Sprint("once", i)
		if err := s.Acquire(ctx, r, "a", time.Hour); err != nil {
			t.Fatalf("Acquire(%s, a) = %v", r, err)
		}
		if err := s.Release(ctx, r, "a"); err != nil {
			t.Fatalf("Release(%s, a) = %v", r, err)
		}
	}
	for i := range s.shards {
		sh := &s.shards[i]
		live := 0
		for _, e := range sh.locks {
			if e.token != "" {
				live++
			}
		}
		// A released entry stays in the map only while the shard has
		// fewer than keepFree of them (see entry).
		if n := len(sh.locks); n > live+keepFree {
			t.Errorf("shard %d keeps %d entries for %d live locks after 100000 names were locked and released; want at most %d+%d", i, n, live, live, keepFree)
		}
	}
}

// Locking and unlocking new names, as a service that locks per request
// does, allocates nothing once the shards have spare entries: a release
// past keepFree takes its entry out of the map for the next new name.
func TestNewNamesAllocateNoEntry(t *testing.T) {
	ctx := context.Background()
	s := New()
	names := make([]string, 20_000)
	for i := range names {
		names[i] = fmt.Sprint("name", i)
	}
	pair := func(r string) {
		if err := s.Acquire(ctx, r, "a", time.Minute); err != nil {
			t.Fatalf("Acquire(%s, a) = %v", r, err)
		}
		if err := s.Release(ctx, r, "a"); err != nil {
			t.Fatalf("Release(%s, a) = %v", r, err)
		}
	}
	for _, r := range names[:10_000] {
		pair(r)
	}
	next := names[10_000:]
	if n := testing.AllocsPerRun(5000, func() { pair(next[0]); next = next[1:] }); n != 0 {
		t.Errorf("Acquire+Release of a name never locked before allocates %v times; want 0", n)
	}
}

// "A lock+unlock pair costs ... no allocation on one core": locking and
// unlocking a name again allocates nothing.
func TestDocPairAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	s := New()
	if n := testing.AllocsPerRun(1000, func() {
		if err := s.Acquire(ctx, "r", "a", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, "r", "a"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Acquire+Release of a name taken before allocates %v times; want 0", n)
	}
}
