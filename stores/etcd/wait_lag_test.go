package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/stores/etcd"
)

// WaitRelease on a resource that is held when the call begins waits for
// its release, also when the store's watch of the resource (lingering
// from an earlier wait) last saw the resource free and has not yet seen
// the lock taken since: the watch's events are held up here, so that it
// never sees it.
func TestWaitReleaseWhileWatchLags(t *testing.T) {
	defer etcd.SetLinger(time.Hour)()
	cluster := etcdtest.Shared(t)
	p, err := faultproxy.New(cluster.Members[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	const prefix = "review-waitlag/"
	s := newStore(t, clientOf(t, p.Addr()), etcd.WithPrefix(prefix))
	other := newStore(t, clientOf(t, cluster.Endpoints()...), etcd.WithPrefix(prefix))
	ctx := ctxFor(t, 30*time.Second)

	// A wait that ends with a release leaves the watch running, having
	// seen the resource free.
	if err := other.Acquire(ctx, "r", "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	woken := make(chan error, 1)
	go func() { woken <- s.WaitRelease(ctx, "r") }()
	waitFor(t, "the waiter to be in line", func() bool { return s.Waiting("r") == 1 })
	if err := other.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if err := <-woken; err != nil {
		t.Fatalf("WaitRelease(r) across Release = %v; want nil", err)
	}

	// The watch hears nothing more; the resource is taken.
	p.Set(faultproxy.Both, faultproxy.Hold())
	t.Cleanup(p.Heal)
	if err := other.Acquire(ctx, "r", "b", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Release(context.Background(), "r", "b") })
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.WaitRelease(wctx, "r"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRelease(r) while r is held and never released = %v; want context.DeadlineExceeded (it returned before the release)", err)
	}
}
