package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

func TestForceReleaseAndLastFence(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client, etcd.WithPrefix("admin/"))
	ctx := ctxFor(t, 30*time.Second)
	if f, ok, err := s.LastFence(ctx, "r"); err != nil || ok {
		t.Errorf("LastFence(r) of a free resource = %d, %v, %v; want false", f, ok, err)
	}
	if held, err := s.ForceRelease(ctx, "r"); err != nil || held {
		t.Errorf("ForceRelease(r) of a free resource = %v, %v; want false, nil", held, err)
	}
	fence, err := s.AcquireFenced(ctx, "r", "a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok, err := s.LastFence(ctx, "r"); err != nil || !ok || f != fence {
		t.Errorf("LastFence(r) while held = %d, %v, %v; want the holder's fence %d", f, ok, err, fence)
	}
	lease := leaseOf(t, client, etcd.LockKey("admin/", "r", "a"))
	if held, err := s.ForceRelease(ctx, "r"); err != nil || !held {
		t.Errorf("ForceRelease(r) of a held resource = %v, %v; want true, nil", held, err)
	}
	if alive(t, client, lease) {
		t.Error("the lease of the force-released lock is alive; want it revoked")
	}
	if err := s.Release(ctx, "r", "a"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(r, a) by the holder after ForceRelease = %v; want ErrNotHeld", err)
	}
}
