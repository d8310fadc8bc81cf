package etcd_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

// A Release racing the same lock's Extend to another TTL (which moves the
// lock to a new lease and keeps the old one for the next acquisition) must
// keep or revoke the lease the key held when it was deleted, not the one it
// held when the Release began: that one may be attached to another lock by
// then, and keeping it again would let Close (or a second lock on it)
// delete that lock while its holder believes it holds it.
func TestReleaseRacingExtendSparesTheNextLockOnTheLease(t *testing.T) {
	endpoints := etcdtest.Shared(t).Endpoints()
	prefix := fmt.Sprintf("release-race%d/", prefixes.Add(1))
	ctx := ctxFor(t, 30*time.Second)
	var s *etcd.Store
	var race func()
	s = newStore(t, hookedClient(t, func(method string) {
		if method == "/etcdserverpb.KV/DeleteRange" && race != nil {
			f := race
			race = nil
			f()
		}
	}, endpoints...), etcd.WithPrefix(prefix))
	if err := s.Acquire(ctx, "a", "tokA", 2*time.Second); err != nil {
		t.Fatalf("Acquire(a) = %v", err)
	}
	race = func() {
		// Between the Release's start and its deletion: a moves to a new
		// lease, and b takes a's old one from the pool.
		if err := s.Extend(ctx, "a", "tokA", 3*time.Second); err != nil {
			t.Errorf("Extend(a, 3s) = %v", err)
		}
		if err := s.Acquire(ctx, "b", "tokB", 2*time.Second); err != nil {
			t.Errorf("Acquire(b) = %v", err)
		}
	}
	if err := s.Release(ctx, "a", "tokA"); err != nil {
		t.Fatalf("Release(a) = %v", err)
	}
	if race != nil {
		t.Fatal("the Release sent no DeleteRange")
	}
	// Close revokes the leases the store keeps, and releases no lock.
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if ok, err := s.Exists(ctx, "b"); !ok || err != nil {
		t.Errorf("Exists(b) after Release(a) raced Extend(a) and Close = %v, %v; want true, nil (b is held)", ok, err)
	}
	if err := s.Release(ctx, "b", "tokB"); err != nil {
		t.Errorf("Release(b, tokB) = %v; want nil", err)
	}
}
