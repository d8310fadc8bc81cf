package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

// longTTL is far longer than the test's waiting leases (SetWaitLease(1)),
// and than the contexts of the tests: a key under a lease of longTTL
// outlives them.
const longTTL = 2 * time.Minute

// A waiter whose process dies while in line (its client closed: neither
// its renewals nor the deletion of its key reach etcd) leaves its key
// under a waiting lease, not one of its TTL: once the holder releases,
// the dead key heads the line only until that lease expires, and the
// next caller gets the lock, rather than waiting out the dead waiter's
// TTL.
func TestDeadWaiterHoldsUpTheLineOnlyForItsWaitingLease(t *testing.T) {
	defer etcd.SetWaitLease(1)()
	cl := etcdtest.Shared(t)
	const prefix = "queue-dead-waiter/"
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, clientOf(t, cl.Endpoints()...), etcd.WithPrefix(prefix))
	if err := s.Acquire(ctx, "r", "a", longTTL); err != nil {
		t.Fatal(err)
	}
	deadClient, err := newClient(cl.Endpoints()...)
	if err != nil {
		t.Fatal(err)
	}
	dead := newStore(t, deadClient, etcd.WithPrefix(prefix))
	b := queue(t, ctx, dead, "r", "b", longTTL)
	_ = deadClient.Close() // the waiter's process dies
	if _, err := b.result(t); err == nil {
		t.Fatal("AcquireQueued(r, b) = nil as its client closed while a holds r; want an error")
	}
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	locker, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	// ctx ends long before the dead waiter's TTL would have.
	l, err := locker.Lock(ctx, "r", longTTL)
	if err != nil {
		t.Fatalf("Lock(r) behind a dead waiter = %v; want the lock once the dead key's waiting lease expires", err)
	}
	if err := locker.Unlock(ctx, l); err != nil {
		t.Error(err)
	}
}

// A lock of a TTL longer than the waiting lease, handed over in line,
// lives its own TTL: the key moves to a lease of that TTL, keeping its
// place and its fence.
func TestLongTTLHandedOverLivesItsTTL(t *testing.T) {
	defer etcd.SetWaitLease(1)()
	cl := etcdtest.Shared(t)
	const prefix = "queue-long-ttl/"
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, clientOf(t, cl.Endpoints()...), etcd.WithPrefix(prefix))
	s2 := newStore(t, clientOf(t, cl.Endpoints()...), etcd.WithPrefix(prefix))
	first, err := s.AcquireQueued(ctx, lock.QueuedAcquisition{Resource: "r", Token: "a", TTL: longTTL, Fenced: true, Wait: time.Minute})
	if err != nil {
		t.Fatalf("AcquireQueued(r, a) of a free resource = %v", err)
	}
	base := s2.Renewals()
	b := queue(t, ctx, s2, "r", "b", longTTL)
	// Renewed every third of its waiting lease: four renewals take longer
	// than the lease, which the wait outlives.
	waitFor(t, "four renewals of b's waiting lease", func() bool { return s2.Renewals()-base >= 4 })
	b.waiting(t, "past its waiting lease")
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	fence, err := b.result(t)
	if err != nil {
		t.Fatalf("AcquireQueued(r, b) after Release(r, a) = %v; want the lock", err)
	}
	if fence <= first {
		t.Errorf("fence of b = %d; want more than a's, %d", fence, first)
	}
	ttl, ok, err := s.TTL(ctx, "r")
	if err != nil || !ok {
		t.Fatalf("TTL(r) once b holds it = %v, %v, %v", ttl, ok, err)
	}
	if ttl < longTTL/2 {
		t.Errorf("TTL(r) once handed to b = %v; want about %v: the lock must live its own TTL, not its waiting lease's", ttl, longTTL)
	}
	if err := s2.Extend(ctx, "r", "b", longTTL); err != nil {
		t.Errorf("Extend(r, b) = %v; want nil: b holds r", err)
	}
	if err := s2.Release(ctx, "r", "b"); err != nil {
		t.Errorf("Release(r, b) = %v; want nil: b holds r", err)
	}
	if err := s2.Release(ctx, "r", "b"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(r, b) again = %v; want ErrNotHeld", err)
	}
}
