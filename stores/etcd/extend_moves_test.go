package etcd_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

// clientCalling returns a client of endpoints that calls after(method)
// once each unary call has been answered.
func clientCalling(t *testing.T, after func(method string), endpoints ...string) *clientv3.Client {
	t.Helper()
	intercept := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		after(method)
		return err
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(intercept)},
	})
	if err != nil {
		t.Fatalf("etcd client of %v: %v", endpoints, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// afterRead returns a store, and a function that sets what runs once
// right after the next read (Range) the store makes.
func afterRead(t *testing.T, opts ...etcd.Option) (*etcd.Store, func(func())) {
	var next func()
	s := newStore(t, clientCalling(t, func(method string) {
		if method == "/etcdserverpb.KV/Range" && next != nil {
			f := next
			next = nil
			f()
		}
	}, etcdtest.Shared(t).Endpoints()...), append(opts, etcd.WithPrefix(fmt.Sprintf("extend-moves%d/", prefixes.Add(1))))...)
	return s, func(f func()) { next = f }
}

// An Extend that finds the lock moved to another lease by another Extend
// of it (to another TTL) since it read the key extends the lock on its
// new lease: the lock is held under the token throughout, and ErrNotHeld
// would tell its holder it lost it. The old lease is kept idle for the
// next lock (the default: the Extend's transaction finds the key gone
// from it) or revoked (WithIdleLeases(0): the renewal finds no lease).
func TestExtendFollowsTheLockToItsNewLease(t *testing.T) {
	for name, opts := range map[string][]etcd.Option{
		"old lease kept":    nil,
		"old lease revoked": {etcd.WithIdleLeases(0)},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxFor(t, 30*time.Second)
			s, onRead := afterRead(t, opts...)
			if err := s.Acquire(ctx, "r", "tok", 2*time.Second); err != nil {
				t.Fatalf("Acquire = %v", err)
			}
			onRead(func() {
				if err := s.Extend(ctx, "r", "tok", 4*time.Second); err != nil {
					t.Errorf("Extend(r, 4s), between the other Extend's read and its renewal = %v; want nil", err)
				}
			})
			if err := s.Extend(ctx, "r", "tok", 20*time.Second); err != nil {
				t.Errorf("Extend(r, 20s), while another Extend moved the lock to a new lease = %v; want nil (the lock is held)", err)
			}
			if left, held, err := s.TTL(ctx, "r"); err != nil || !held || left <= 10*time.Second {
				t.Errorf("TTL(r) after Extend(r, 4s) and then Extend(r, 20s) = %v, %v, %v; want 20s or a little less, true, nil", left, held, err)
			}
			if err := s.Release(ctx, "r", "tok"); err != nil {
				t.Errorf("Release = %v; want nil", err)
			}
		})
	}
}

// TTL reads the lease the lock is on: an Extend to another TTL moving the
// lock to a new lease between TTL's read of the key and of the lease
// neither makes the lock read free (its old lease revoked) nor makes it
// read the old lease's time (the old lease kept idle).
func TestTTLFollowsTheLockToItsNewLease(t *testing.T) {
	for name, opts := range map[string][]etcd.Option{
		"old lease kept":    nil,
		"old lease revoked": {etcd.WithIdleLeases(0)},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxFor(t, 30*time.Second)
			s, onRead := afterRead(t, opts...)
			if err := s.Acquire(ctx, "r", "tok", 2*time.Second); err != nil {
				t.Fatalf("Acquire = %v", err)
			}
			onRead(func() {
				if err := s.Extend(ctx, "r", "tok", 20*time.Second); err != nil {
					t.Errorf("Extend(r, 20s) = %v; want nil", err)
				}
			})
			left, held, err := s.TTL(ctx, "r")
			if err != nil || !held || left <= 10*time.Second {
				t.Errorf("TTL(r), the lock extended from 2s to 20s between its reads = %v, %v, %v; want 20s or a little less, true, nil", left, held, err)
			}
			if err := s.Release(ctx, "r", "tok"); err != nil {
				t.Errorf("Release = %v; want nil", err)
			}
		})
	}
}
