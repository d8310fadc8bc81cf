package memcache_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
)

// TestReleaseAndExtendCompareAndSwapOnly: as the package documentation
// says, Release and Extend are a gets and a cas — Release never the
// unconditional delete, Extend never touch — and an Extend of a lock that
// is gone does not create it again.
func TestReleaseAndExtendCompareAndSwapOnly(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t))
	stats := func() map[string]int64 {
		t.Helper()
		out := map[string]int64{}
		for _, stat := range []string{"cmd_touch", "delete_hits", "delete_misses", "cas_hits"} {
			v, err := srv.Stat(stat)
			if err != nil {
				t.Fatal(err)
			}
			out[stat] = v
		}
		return out
	}
	before := stats()
	if err := s.Acquire(ctx(t), "r", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Extend(ctx(t), "r", "b", time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Extend(r, other token) = %v; want lock.ErrNotHeld", err)
	}
	if err := s.Extend(ctx(t), "r", "a", time.Minute); err != nil {
		t.Errorf("Extend(r, a) = %v; want nil", err)
	}
	if err := s.Release(ctx(t), "r", "b"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(r, other token) = %v; want lock.ErrNotHeld", err)
	}
	if err := s.Release(ctx(t), "r", "a"); err != nil {
		t.Errorf("Release(r, a) = %v; want nil", err)
	}
	if err := s.Release(ctx(t), "r", "a"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(r, a) again = %v; want lock.ErrNotHeld", err)
	}
	if err := s.Extend(ctx(t), "r", "a", time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Extend(r, a) of a released lock = %v; want lock.ErrNotHeld", err)
	}
	if held, err := s.Exists(ctx(t), "r"); err != nil || held {
		t.Errorf("Exists(r) after an Extend of the released lock = %v, %v; want false: Extend never re-creates a lock", held, err)
	}
	after := stats()
	for stat, want := range map[string]int64{"cmd_touch": 0, "delete_hits": 0, "delete_misses": 0, "cas_hits": 2} {
		if got := after[stat] - before[stat]; got != want {
			t.Errorf("memcached %s grew by %d; want %d (one cas for the Extend, one for the Release, and no touch or delete)", stat, got, want)
		}
	}
}
