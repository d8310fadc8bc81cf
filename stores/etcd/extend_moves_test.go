package etcd_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

// afterRead returns a store, and a function that sets what runs once
// right after the next read (Range) the store makes.
func afterRead(t *testing.T, opts ...etcd.Option) (*etcd.Store, func(func())) {
	var next func()
	c := interceptedClient(t, func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if method == "/etcdserverpb.KV/Range" && next != nil {
			f := next
			next = nil
			f()
		}
		return err
	}, etcdtest.Shared(t).Endpoints()...)
	return newStore(t, c, append(opts, etcd.WithPrefix(fmt.Sprintf("extend-moves%d/", prefixes.Add(1))))...), func(f func()) { next = f }
}

// An Extend to another TTL moves the lock to a new lease. A call that
// read the key before such a move follows the lock to its new lease: an
// Extend extends it there (the lock is held under the token throughout,
// and ErrNotHeld would tell its holder it lost it), and TTL reads the new
// lease's time, neither reading the lock free nor giving the old lease's.
// The old lease is kept idle for the next lock (the default: an Extend's
// transaction finds the key gone from it, TTL finds it without the key)
// or revoked (WithIdleLeases(0): the renewal or TTL finds no lease).
func TestCallsFollowTheLockToItsNewLease(t *testing.T) {
	calls := []struct {
		name  string
		moved time.Duration // the TTL of the Extend that moves the lock after the call's read
		call  func(ctx context.Context, s *etcd.Store) error
	}{
		{"Extend(r, 20s) after Extend(r, 4s)", 4 * time.Second, func(ctx context.Context, s *etcd.Store) error {
			return s.Extend(ctx, "r", "tok", 20*time.Second)
		}},
		{"TTL(r) after Extend(r, 20s)", 20 * time.Second, func(context.Context, *etcd.Store) error { return nil }},
	}
	for _, c := range calls {
		for mode, opts := range map[string][]etcd.Option{"old lease kept": nil, "old lease revoked": {etcd.WithIdleLeases(0)}} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				ctx := ctxFor(t, 30*time.Second)
				s, onRead := afterRead(t, opts...)
				if err := s.Acquire(ctx, "r", "tok", 2*time.Second); err != nil {
					t.Fatalf("Acquire = %v", err)
				}
				onRead(func() {
					if err := s.Extend(ctx, "r", "tok", c.moved); err != nil {
						t.Errorf("Extend(r, %v), between the call's read and its next step = %v; want nil", c.moved, err)
					}
				})
				if err := c.call(ctx, s); err != nil {
					t.Errorf("%s, the lock moved to a new lease meanwhile = %v; want nil (the lock is held)", c.name, err)
				}
				// The lock's TTL is 20s now, read a little less: its lease's,
				// not that of the lease it was on at the read (2s or 4s).
				if left, held, err := s.TTL(ctx, "r"); err != nil || !held || left <= 10*time.Second {
					t.Errorf("then TTL(r) = %v, %v, %v; want 20s or a little less, true, nil", left, held, err)
				}
				if err := s.Release(ctx, "r", "tok"); err != nil {
					t.Errorf("Release = %v; want nil", err)
				}
			})
		}
	}
}
