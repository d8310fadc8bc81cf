package etcd_test

import (
	"context"
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

// Close with a context that has ended still stops the store keeping
// leases and closes its idle keepalive streams, none of which needs a
// request: its releases revoke their leases from then on, as after any
// Close. It returns the context's error, for the kept leases it could
// not revoke (they expire by themselves).
func TestCloseWithEndedContext(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client, etcd.WithPrefix("close-ended/"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "a", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Extend(ctx, "r", "a", 5*time.Second); err != nil { // opens a keepalive stream
		t.Fatal(err)
	}
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Close(ended); !errors.Is(err, context.Canceled) {
		t.Errorf("Close(canceled ctx) = %v; want context.Canceled", err)
	}
	if n := s.IdleStreams(); n != 0 {
		t.Errorf("Close(canceled ctx) left %d idle keepalive streams open; want 0", n)
	}
	if err := s.Acquire(ctx, "r", "b", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	id := leaseOf(t, client, etcd.LockKey("close-ended/", "r", "b"))
	if err := s.Release(ctx, "r", "b"); err != nil {
		t.Fatal(err)
	}
	if alive(t, client, id) {
		t.Errorf("lease %x of a lock released after Close(canceled ctx) is alive, kept; want it revoked", id)
	}
}
