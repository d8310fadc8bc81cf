package redissuite

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

func (f Factory) testForceReleaseAdmin(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, 30*time.Second)

	if held, err := s.ForceRelease(ctx, "free"); err != nil || held {
		t.Fatalf("ForceRelease of a free resource = %v, %v; want false, nil", held, err)
	}
	// Braces and percent signs are escaped in keys: ForceRelease must find
	// the key the lock was taken under.
	for _, r := range []string{"r", "{x}%7D"} {
		if err := s.Acquire(ctx, r, "owner", time.Minute); err != nil {
			t.Fatalf("Acquire(%q) = %v", r, err)
		}
		if held, err := s.ForceRelease(ctx, r); err != nil || !held {
			t.Fatalf("ForceRelease(%q) of a held resource = %v, %v; want true, nil", r, held, err)
		}
		if held, err := s.Exists(ctx, r); err != nil || held {
			t.Fatalf("Exists(%q) after ForceRelease = %v, %v; want false", r, held, err)
		}
		if err := s.Release(ctx, r, "owner"); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("the owner's Release(%q) after ForceRelease = %v; want ErrNotHeld", r, err)
		}
	}
}

func (f Factory) testForceReleaseWakesWaiters(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("admin:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "owner", time.Hour); err != nil {
		t.Fatal(err)
	}
	woken := make(chan error, 1)
	go func() { woken <- s.WaitRelease(ctx, "r") }()
	// Once the waiter is in line, only the wake-up can wake it before ctx
	// ends: the lock has an hour to live.
	eventually(t, "in line", func() bool {
		n, err := srv.Do("LLEN", "admin:{r}:waiters").AsInt64()
		return err == nil && n == 1
	})
	if _, err := s.ForceRelease(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if err := <-woken; err != nil {
		t.Fatalf("WaitRelease after ForceRelease = %v; want nil", err)
	}
}

func (f Factory) testLastFence(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, 30*time.Second)
	if f, ok, err := s.LastFence(ctx, "r"); err != nil || ok || f != 0 {
		t.Fatalf("LastFence before any lock = %d, %v, %v; want 0, false, nil", f, ok, err)
	}
	first, err := s.AcquireFenced(ctx, "r", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok, err := s.LastFence(ctx, "r"); err != nil || !ok || f != first {
		t.Fatalf("LastFence while held = %d, %v, %v; want the holder's fence %d", f, ok, err, first)
	}
	if _, err := s.ForceRelease(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if f, ok, err := s.LastFence(ctx, "r"); err != nil || !ok || f != first {
		t.Fatalf("LastFence after ForceRelease = %d, %v, %v; want %d kept", f, ok, err, first)
	}
	second, err := s.AcquireFenced(ctx, "r", "b", time.Minute)
	if err != nil || second <= first {
		t.Fatalf("AcquireFenced after ForceRelease = %d, %v; want a fence > %d", second, err, first)
	}
	if f, _, err := s.LastFence(ctx, "r"); err != nil || f != second {
		t.Fatalf("LastFence = %d, %v; want the new holder's %d", f, err, second)
	}
}
