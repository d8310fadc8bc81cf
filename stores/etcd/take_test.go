package etcd

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockkit/lock/internal/testing/etcdtest"
)

// A kept lease is renewed for an acquisition unless the store knows that
// etcd keeps it a whole TTL from the acquisition's start without: a lease
// of 2s kept for a lock of 1.5s needs none while it has 1.5s left.
func TestTakeRenewsUnlessLongEnough(t *testing.T) {
	now := time.Now()
	const ttl = 1500 * time.Millisecond
	for _, c := range []struct {
		left  time.Duration
		renew bool
	}{
		{2 * time.Second, false},
		{ttl, false},
		{ttl - time.Nanosecond, true},
		{margin + time.Nanosecond, true},
	} {
		var p pool
		p.init()
		p.max = 1
		p.granted(lease{id: 1, secs: 2, expires: now.Add(c.left), key: "k"})
		p.keep(1, "k")
		l, ok, renew := p.take("k", 2, now, ttl)
		if !ok || l.id != 1 || renew != c.renew {
			t.Errorf("take(2s, now, %v) of a lease with %v left = %x, %v, renew %v; want it, renew %v", ttl, c.left, l.id, ok, renew, c.renew)
		}
	}
	var p pool
	p.init()
	p.max = 1
	p.granted(lease{id: 1, secs: 2, expires: now.Add(margin), key: "k"})
	p.keep(1, "k")
	if _, ok, _ := p.take("k", 2, now, ttl); ok {
		t.Errorf("take(2s) of a lease with %v left = ok; want it dropped, as it may expire before its renewal arrives", margin)
	}
}

// An acquisition that did not renew its kept lease leaves the expiry the
// store knows for it as it was: taking the acquisition's start for a
// renewal would let a later lock skip a renewal it needs.
func TestUnrenewedLeaseKeepsItsExpiry(t *testing.T) {
	client, err := clientv3.New(clientv3.Config{Endpoints: etcdtest.Shared(t).Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s, err := New(client, WithPrefix("unrenewed/"), WithMinTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const ttl = 1500 * time.Millisecond // a lease of 2s
	for i, token := range []string{"a", "b"} {
		if err := s.Acquire(ctx, "r", token, ttl); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, "r", token); err != nil {
			t.Fatal(err)
		}
		s.pool.mu.Lock()
		kept := s.pool.idle[2]
		if len(kept) != 1 {
			s.pool.mu.Unlock()
			t.Fatalf("%d leases of 2s kept after a release; want 1", len(kept))
		}
		if i == 0 {
			// Make the store believe the lease lives long enough for the
			// next lock without a renewal.
			kept[0].expires = time.Now().Add(time.Hour)
		}
		expires := kept[0].expires
		s.pool.mu.Unlock()
		if i == 1 && time.Until(expires) < 59*time.Minute {
			t.Errorf("the kept lease's known expiry is %v from now after an acquisition that did not renew it; want it unchanged, about an hour", time.Until(expires).Round(time.Second))
		}
	}
}
