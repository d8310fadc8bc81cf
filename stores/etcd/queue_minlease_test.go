package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

// A queued acquisition of a valid TTL must not be refused as invalid
// because the cluster's shortest lease is longer than the waiting lease
// the store picked on its own (15s in production: a cluster whose
// election timeout is over 10s, on a store without WithMinTTL). Modelled
// here with a waiting lease of 1s on a cluster whose shortest lease is 2s.
func TestWaitLeaseBelowClusterMinimumIsNotInvalid(t *testing.T) {
	defer etcd.SetWaitLease(1)()
	c := etcdtest.Start(t, 1, &etcdtest.Options{ElectionTimeout: time.Second}) // shortest lease 2s
	client := clientOf(t, c.Endpoints()...)
	s := newStore(t, client) // minimum 1s
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	_, err := s.AcquireQueued(ctx, lock.QueuedAcquisition{Resource: "r", Token: "b", TTL: 10 * time.Second, Wait: 2 * time.Second})
	if !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("AcquireQueued(r, b, TTL 10s) while a holds r = %v; want ErrNotAcquired once its wait ran out: a TTL of 10s is valid on this cluster", err)
	}
}

// The move to a lease of the TTL keeps the key's create revision, so the
// fence AcquireQueued returns is the one LastFence reads.
func TestPromoteKeepsFence(t *testing.T) {
	defer etcd.SetWaitLease(1)()
	cl := etcdtest.Shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, clientOf(t, cl.Endpoints()...), etcd.WithPrefix("queue-promote-fence/"))
	if err := s.Acquire(ctx, "r", "a", longTTL); err != nil {
		t.Fatal(err)
	}
	b := queue(t, ctx, s, "r", "b", longTTL)
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	fence, err := b.result(t)
	if err != nil {
		t.Fatal(err)
	}
	last, ok, err := s.LastFence(ctx, "r")
	if err != nil || !ok || last != fence {
		t.Errorf("LastFence(r) = %d, %v, %v; want %d, true, nil", last, ok, err, fence)
	}
	if err := s.Release(ctx, "r", "b"); err != nil {
		t.Error(err)
	}
}
