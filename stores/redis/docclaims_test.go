package redis_test

// Checks of what the package's documentation (doc.go and the doc comments
// of its exported names) promises and the other tests do not cover.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

// WithPrefix refuses the prefix of a cluster's fence counters;
// WithFenceRetention refuses a d below 1ms and does nothing otherwise.
func TestDocOptionRefusals(t *testing.T) {
	client := redistest.Start(t).NewClient(t)
	for name, opt := range map[string]redis.Option{
		"WithPrefix(FenceKey + \":\")": redis.WithPrefix(redis.FenceKey + ":"),
		"WithFenceRetention(999µs)":    redis.WithFenceRetention(999 * time.Microsecond),
		"WithFenceRetention(-1h)":      redis.WithFenceRetention(-time.Hour),
		"WithRestartGuard(0)":          redis.WithRestartGuard(0),
		"WithWaitReplicas(-1, 1s)":     redis.WithWaitReplicas(-1, time.Second),
		"WithPrefix(\"lock:{x}:\")":    redis.WithPrefix("lock:{x}:"),
	} {
		if _, err := redis.New(client, opt); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("New with %s = %v; want an error matching lock.ErrInvalid", name, err)
		}
	}
	if _, err := redis.New(client, redis.WithRestartGuard(time.Minute), redis.WithWaitReplicas(1, time.Second)); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New with WithRestartGuard and WithWaitReplicas = %v; want an error matching lock.ErrInvalid", err)
	}
	if _, err := redis.New(client, redis.WithFenceRetention(time.Millisecond)); err != nil {
		t.Errorf("New with WithFenceRetention(1ms) = %v; want nil", err)
	}
}

// Keys: prefix + "{" + e + "}", e the resource with "%" and "}"
// percent-escaped; nothing of a resource stays once its lock is released.
func TestDocKeys(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv.NewClient(t), redis.WithPrefix("doc:"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for resource, key := range map[string]string{
		"plain":   "doc:{plain}",
		"a}b%c":   "doc:{a%7Db%25c}",
		"{x}":     "doc:{{x%7D}",
		"%7D":     "doc:{%257D}",
		"a b\x00": "doc:{a b\x00}",
	} {
		if err := s.Acquire(ctx, resource, "t", time.Minute); err != nil {
			t.Fatalf("Acquire(%q) = %v", resource, err)
		}
		if n, err := srv.Do("EXISTS", key).AsInt64(); err != nil || n != 1 {
			t.Errorf("EXISTS %q after Acquire(%q) = %d, %v; want 1", key, resource, n, err)
		}
		if err := s.Release(ctx, resource, "t"); err != nil {
			t.Fatalf("Release(%q) = %v", resource, err)
		}
		if n, err := srv.Do("EXISTS", key).AsInt64(); err != nil || n != 0 {
			t.Errorf("EXISTS %q after Release(%q) = %d, %v; want 0", key, resource, n, err)
		}
	}
	keys, err := srv.Do("KEYS", "doc:*").AsStrSlice()
	if err != nil || len(keys) != 0 {
		t.Errorf("keys under the prefix after every lock was released = %q, %v; want none", keys, err)
	}
}

// LastFence: no fence handed out so far is greater, and every fenced
// acquisition of any resource of the server, a refused one too (without
// the restart guard), moves it on.
func TestDocLastFenceMovesOnWithEveryFencedAcquisition(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv.NewClient(t))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	last := func(when string) uint64 {
		t.Helper()
		f, ok, err := s.LastFence(ctx, "r")
		if err != nil || !ok {
			t.Fatalf("LastFence(r) %s = %d, %v, %v; want a fence", when, f, ok, err)
		}
		return f
	}
	first, err := s.AcquireFenced(ctx, "r", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := last("while r is held"); got != first {
		t.Errorf("LastFence(r) while held = %d; want the holder's fence %d", got, first)
	}
	if _, err := s.AcquireFenced(ctx, "r", "b", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("AcquireFenced(r, b) of a held lock = %v; want ErrNotAcquired", err)
	}
	afterRefusal := last("after a refused acquisition")
	if afterRefusal <= first {
		t.Errorf("LastFence(r) after a refused fenced acquisition = %d; want above %d (a refused one moves it on too)", afterRefusal, first)
	}
	other, err := s.AcquireFenced(ctx, "other", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := last("after another resource's acquisition"); got < other {
		t.Errorf("LastFence(r) = %d after a fence %d for another resource of the server; want at least that (one counter per server)", got, other)
	}
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	before := last("after the release")
	next, err := s.AcquireFenced(ctx, "r", "c", time.Minute)
	if err != nil || next <= before {
		t.Errorf("AcquireFenced(r, c) = %d, %v; want a fence above LastFence's %d", next, err, before)
	}
}
