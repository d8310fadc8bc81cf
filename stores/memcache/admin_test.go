package memcache_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

func TestForceRelease(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t), memcache.WithPrefix("admin:"))
	c := ctx(t)

	if held, err := s.ForceRelease(c, "free"); err != nil || held {
		t.Fatalf("ForceRelease of a free resource = %v, %v; want false, nil", held, err)
	}
	// A plain name and one stored under its hashed key.
	for _, r := range []string{"r", "with space " + strings.Repeat("x", 300)} {
		if err := s.Acquire(c, r, "owner", time.Minute); err != nil {
			t.Fatalf("Acquire(%.20q) = %v", r, err)
		}
		if held, err := s.ForceRelease(c, r); err != nil || !held {
			t.Fatalf("ForceRelease(%.20q) of a held resource = %v, %v; want true, nil", r, held, err)
		}
		if held, err := s.Exists(c, r); err != nil || held {
			t.Fatalf("Exists(%.20q) after ForceRelease = %v, %v; want false", r, held, err)
		}
		if err := s.Release(c, r, "owner"); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("the owner's Release(%.20q) after ForceRelease = %v; want ErrNotHeld", r, err)
		}
	}
	if _, found := item(t, srv, "admin:r"); found {
		t.Fatal("the key admin:r is still on the server after ForceRelease")
	}

	srv.Kill()
	if held, err := s.ForceRelease(c, "r"); err == nil || held {
		t.Fatalf("ForceRelease on a dead server = %v, %v; want an error", held, err)
	}
}

// ForceRelease after memcached restarted sends its delete again when it
// fails on an idle connection to the old process (a forced delete may be
// sent twice), and reports the resource free, as the restart left it.
func TestForceReleaseAfterRestart(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t), memcache.WithPrefix("admin:"))
	if err := s.Acquire(ctx(t), "r", "owner", time.Minute); err != nil {
		t.Fatalf("Acquire(r) = %v", err)
	}
	idleConnections(t, s, 8)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if held, err := s.ForceRelease(ctx(t), "r"); err != nil || held {
		t.Fatalf("ForceRelease(r) after a restart = %v, %v; want false, nil", held, err)
	}
	if err := s.Acquire(ctx(t), "r", "next", time.Minute); err != nil {
		t.Fatalf("Acquire(r) after the restart = %v; want nil", err)
	}
	if held, err := s.ForceRelease(ctx(t), "r"); err != nil || !held {
		t.Fatalf("ForceRelease(r) of a lock taken after the restart = %v, %v; want true, nil", held, err)
	}
}
