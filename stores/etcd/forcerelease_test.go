package etcd_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

// hookedClient returns a client of endpoints, closed when t ends, that
// calls before(method) before each unary call it sends.
func hookedClient(t *testing.T, before func(method string), endpoints ...string) *clientv3.Client {
	t.Helper()
	return interceptedClient(t, func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		before(method)
		return invoker(ctx, method, req, reply, cc, opts...)
	}, endpoints...)
}

// interceptedClient returns a client of endpoints, closed when t ends,
// whose unary calls go through intercept.
func interceptedClient(t *testing.T, intercept grpc.UnaryClientInterceptor, endpoints ...string) *clientv3.Client {
	t.Helper()
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

// ForceRelease of one resource must never delete the lock on another.
// The holder's store reuses the lease of a released lock for its next
// acquisition, so a ForceRelease that read the lock's lease, and then
// revoked it after the holder had released the lock and taken another
// with the same lease, would delete that other lock, which its holder
// goes on believing it holds.
func TestForceReleaseSparesTheNextLockOnTheLease(t *testing.T) {
	endpoints := etcdtest.Shared(t).Endpoints()
	holderClient := clientOf(t, endpoints...)
	holder := newStore(t, holderClient, etcd.WithPrefix("force-reuse/"))
	ctx := ctxFor(t, 30*time.Second)

	var once sync.Once
	var hookErr error
	var l1, l2 clientv3.LeaseID
	between := func(method string) {
		if method != "/etcdserverpb.Lease/LeaseRevoke" && method != "/etcdserverpb.KV/Txn" {
			return
		}
		// ForceRelease has read r1's key: its holder releases it and
		// takes r2, whose acquisition takes the lease r1 used.
		once.Do(func() {
			if hookErr = holder.Release(ctx, "r1", "a"); hookErr != nil {
				return
			}
			if hookErr = holder.Acquire(ctx, "r2", "b", 10*time.Second); hookErr != nil {
				return
			}
			l2 = leaseOf(t, holderClient, etcd.LockKey("force-reuse/", "r2", "b"))
		})
	}
	admin := newStore(t, hookedClient(t, between, endpoints...), etcd.WithPrefix("force-reuse/"))

	if err := holder.Acquire(ctx, "r1", "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	l1 = leaseOf(t, holderClient, etcd.LockKey("force-reuse/", "r1", "a"))
	held, err := admin.ForceRelease(ctx, "r1")
	if hookErr != nil {
		t.Fatalf("the holder's Release(r1) and Acquire(r2) between ForceRelease's read and its write: %v", hookErr)
	}
	if err != nil {
		t.Fatalf("ForceRelease(r1) = %v, %v; want no error", held, err)
	}
	if l2 != l1 {
		t.Fatalf("the holder took r2 under lease %x, not r1's %x: the race this test sets up did not happen", l2, l1)
	}
	if ok, err := holder.Exists(ctx, "r2"); err != nil || !ok {
		t.Errorf("Exists(r2) after ForceRelease(r1) = %v, %v; want true: ForceRelease of r1 deleted the lock on r2", ok, err)
	}
	if err := holder.Release(ctx, "r2", "b"); err != nil {
		t.Errorf("Release(r2, b) after ForceRelease(r1) = %v; want nil", err)
	}
}

// The longest TTLs are refused as too long: rounded up to whole seconds
// without overflowing, they are not taken for negative ones and refused
// as below the minimum.
func TestLongestTTLsRefusedAsTooLong(t *testing.T) {
	s, err := etcd.New(clientOf(t, deadEndpoint(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 30*time.Second)
	for _, ttl := range []time.Duration{math.MaxInt64, math.MaxInt64 - time.Second + 2} {
		err := s.Acquire(ctx, "r", "a", ttl)
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "at most") {
			t.Errorf("Acquire(r, a, %v) = %v; want ErrInvalid saying the TTL is too long", ttl, err)
		}
		err = s.Extend(ctx, "r", "a", ttl)
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "at most") {
			t.Errorf("Extend(r, a, %v) = %v; want ErrInvalid saying the TTL is too long", ttl, err)
		}
	}
}
