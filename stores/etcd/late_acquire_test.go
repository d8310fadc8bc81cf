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

// TestCutShortAcquireUndone: an Acquire whose context ends while its
// transaction is on its way revokes the transaction's lease, so that a
// transaction landing later leaves no lock behind. The revocation used
// to be sent on the ended context, that is never: the lock stayed until
// its TTL (an hour here).
func TestCutShortAcquireUndone(t *testing.T) {
	cluster := etcdtest.Shared(t)
	p, err := faultproxy.New(cluster.Members[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	s := newStore(t, clientOf(t, p.Addr()), etcd.WithPrefix("late-acquire/"))
	observer := newStore(t, clientOf(t, cluster.Endpoints()...), etcd.WithPrefix("late-acquire/"))
	ctx := ctxFor(t, 30*time.Second)
	// A lease kept from a lock released: the next Acquire sends no grant,
	// only its transaction.
	if err := s.Acquire(ctx, "warm", "warm", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "warm", "warm"); err != nil {
		t.Fatal(err)
	}
	p.Set(faultproxy.ToServer, faultproxy.Delay(300*time.Millisecond, 0))
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err = s.Acquire(cctx, "r", "tok", time.Hour)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire(r) cut short = %v; want DeadlineExceeded", err)
	}
	// A call sent after it through the same connection lands after it.
	if err := s.Acquire(ctx, "barrier", "barrier", time.Hour); err != nil {
		t.Fatal(err)
	}
	p.Heal()
	for {
		held, err := observer.Exists(ctx, "r")
		if err != nil {
			t.Fatalf("Exists(r) = %v", err)
		}
		if !held {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("r still held: the cut-short Acquire's lease was not revoked")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
