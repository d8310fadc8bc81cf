package memcache_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// When the item keeps changing under the caller's own token between the
// gets and the cas, Release gives up after 8 rounds of gets and cas, as
// the package doc says, with an error other than ErrNotHeld.
func TestCASRoundsBounded(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	client := srv.Client(t)
	s := newStore(t, client, memcache.WithPrefix("p:"))
	other := newStore(t, client, memcache.WithPrefix("p:"))
	if err := s.Acquire(ctx(t), "r", "a", time.Minute); err != nil {
		t.Fatalf("Acquire(r, a) = %v", err)
	}
	rounds := 0
	var hookErr error
	memcache.SetBeforeCAS(s, func(string) {
		rounds++
		if err := other.Extend(ctx(t), "r", "a", time.Minute); err != nil && hookErr == nil {
			hookErr = err
		}
	})
	err := s.Release(ctx(t), "r", "a")
	if hookErr != nil {
		t.Fatalf("Extend(r, a) between the gets and the cas = %v", hookErr)
	}
	if err == nil || errors.Is(err, lock.ErrNotHeld) || rounds != 8 {
		t.Fatalf("Release(r, a) with the item changed before every cas = %v after %d rounds; want an error other than ErrNotHeld after 8", err, rounds)
	}
	if held, err := s.Exists(ctx(t), "r"); err != nil || !held {
		t.Fatalf("Exists(r) after the Release that gave up = %v, %v; want true", held, err)
	}
}
