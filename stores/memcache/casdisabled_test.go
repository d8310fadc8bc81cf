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

// With CAS disabled (-C), a Release or Extend that finds the caller's
// token fails with an error saying so (TestCASDisabled); one that finds
// the resource free or held under another token reports lock.ErrNotHeld,
// which the gets alone makes certain, as the package doc says.
func TestCASDisabledNotHeld(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, &memcachetest.Options{Args: []string{"-C"}})
	s := newStore(t, srv.Client(t), memcache.WithPrefix("p:"))
	if err := s.Acquire(ctx(t), "r", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Release(r, b)":    s.Release(ctx(t), "r", "b"),
		"Extend(r, b)":     s.Extend(ctx(t), "r", "b", time.Minute),
		"Release(free, a)": s.Release(ctx(t), "free", "a"),
		"Extend(free, a)":  s.Extend(ctx(t), "free", "a", time.Minute),
	} {
		if !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("%s on a memcached run with -C = %v; want ErrNotHeld", name, err)
		}
	}
	if err := s.Release(ctx(t), "r", "a"); err == nil || !strings.Contains(err.Error(), "CAS disabled") {
		t.Errorf("Release(r, a) on a memcached run with -C = %v; want an error saying CAS is disabled", err)
	}
}
