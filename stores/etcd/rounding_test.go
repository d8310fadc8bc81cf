package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

// TTLs are rounded up to whole seconds before anything else, as the
// package doc says: the minimum is checked against the rounded TTL (with
// the default minimum of 2s, 1.5s is taken and 1s refused), and the
// lease's slack is a tenth of the rounded TTL (a lock of 9.5s has a lease
// of 11s, one of 9s a lease of 9s).
func TestTTLsRoundedUpFirst(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s, err := etcd.New(client, etcd.WithPrefix("rounded-up/"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "short", "a", time.Second); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Acquire(1s) with the default minimum of %v = %v; want ErrInvalid", etcd.DefaultMinTTL, err)
	}
	for _, c := range []struct {
		ttl   time.Duration
		lease int64
	}{
		{1500 * time.Millisecond, 2},
		{9 * time.Second, 9},
		{9500 * time.Millisecond, 11},
		{19 * time.Second, 20},
		{19500 * time.Millisecond, 22},
	} {
		if err := s.Acquire(ctx, "r", "a", c.ttl); err != nil {
			t.Fatalf("Acquire(%v) with the default minimum of %v = %v; want nil", c.ttl, etcd.DefaultMinTTL, err)
		}
		resp, err := client.TimeToLive(ctx, leaseOf(t, client, etcd.LockKey("rounded-up/", "r", "a")))
		if err != nil {
			t.Fatal(err)
		}
		if resp.GrantedTTL != c.lease {
			t.Errorf("the lease of a lock of %v lasts %ds; want %ds", c.ttl, resp.GrantedTTL, c.lease)
		}
		if err := s.Release(ctx, "r", "a"); err != nil {
			t.Fatal(err)
		}
	}
}
