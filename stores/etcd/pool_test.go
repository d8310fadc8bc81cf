package etcd_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

// A released lock's lease is kept and taken by the next acquisition of
// the same TTL, renewed: the new lock has a whole TTL however long the
// lease waited in the pool.
func TestKeptLeaseRenewed(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client, etcd.WithPrefix("kept-renewed/"))
	ctx := ctxFor(t, 30*time.Second)
	fence, err := s.AcquireFenced(ctx, "r", "a", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	kept := leaseOf(t, client, etcd.LockKey("kept-renewed/", "r", "a"))
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	// Wait until the kept lease has run down to at most 2s of its 5s.
	left, _ := timeToLive(t, client, kept)
	for left > 2 {
		time.Sleep(100 * time.Millisecond)
		left, _ = timeToLive(t, client, kept)
	}
	next, err := s.AcquireFenced(ctx, "r", "b", 5*time.Second)
	if err != nil || next <= fence {
		t.Fatalf("AcquireFenced(r, b) after the release = %d, %v; want a fence > %d", next, err, fence)
	}
	if got := leaseOf(t, client, etcd.LockKey("kept-renewed/", "r", "b")); got != kept {
		t.Errorf("the second lock's lease is %x; want %x, the first lock's, kept", got, kept)
	}
	if now, keys := timeToLive(t, client, kept); now <= left || keys != 1 {
		t.Errorf("the kept lease has %ds left and %d keys after the acquisition, %ds before; want it renewed, with one key", now, keys, left)
	}
	if err := s.Release(ctx, "r", "b"); err != nil {
		t.Fatal(err)
	}
}

// A lock's lease lasts longer than its TTL by its slack, so that the
// locks taken within the slack of the lease's grant need no renewal: a
// lease of slack enough serves lock after lock without one. Without
// slack, every lock after the first renews the kept lease.
func TestSlackSavesRenewals(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	for _, c := range []struct {
		slack    int64
		opts     []etcd.Option
		renewals int64
	}{{100, nil, 0}, {0, nil, 4}, {100, []etcd.Option{etcd.WithoutLeaseSlack()}, 4}} {
		restore := etcd.SetSlack(c.slack)
		s := newStore(t, client, c.opts...)
		restore()
		ctx := ctxFor(t, 30*time.Second)
		for i := range 5 {
			token := fmt.Sprint("t", i)
			if err := s.Acquire(ctx, "r", token, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			if d, held, err := s.TTL(ctx, "r"); err != nil || !held || d > 5*time.Second {
				t.Errorf("TTL(r) of a 5s lock with a lease of %ds of slack = %v, %v, %v; want at most 5s", c.slack, d, held, err)
			}
			if err := s.Release(ctx, "r", token); err != nil {
				t.Fatal(err)
			}
		}
		if got := s.Renewals(); got != c.renewals {
			t.Errorf("%d renewals for 5 locks of 5s in a row with %ds of slack (%d options); want %d", got, c.slack, len(c.opts), c.renewals)
		}
	}
}

// A kept lease found gone (it expired, or was revoked) costs the
// acquisition a fresh lease, not the lock.
func TestKeptLeaseGone(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client, etcd.WithPrefix("kept-gone/"))
	ctx := ctxFor(t, 30*time.Second)
	kept := acquire(t, s, client, "kept-gone/")
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Revoke(ctx, kept); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, "r", "b", 5*time.Second); err != nil {
		t.Fatalf("Acquire(r, b) with the kept lease gone = %v; want nil", err)
	}
	if got := leaseOf(t, client, etcd.LockKey("kept-gone/", "r", "b")); got == kept {
		t.Errorf("the lock's lease is %x, the revoked one", got)
	}
	if err := s.Release(ctx, "r", "b"); err != nil {
		t.Fatal(err)
	}
}

// A lock released by another store than the one that took it has a lease
// that store did not lend: it is revoked, not kept.
func TestForeignLeaseRevoked(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	a := newStore(t, client, etcd.WithPrefix("foreign/"))
	b := newStore(t, client, etcd.WithPrefix("foreign/"))
	ctx := ctxFor(t, 30*time.Second)
	id := acquire(t, a, client, "foreign/")
	if err := b.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if alive(t, client, id) {
		t.Errorf("lease %x of a lock released by another store is alive; want it revoked", id)
	}
}

// Under contention, with refused acquisitions and TTLs that differ, no
// lease ever holds two keys, the store keeps no more leases than its
// bound, and Close revokes them. On a cluster of its own, where every
// lease is the test's.
func TestKeptLeasesContended(t *testing.T) {
	client := clientOf(t, etcdtest.Start(t, 1, nil).Endpoints()...)
	const bound = 3
	s := newStore(t, client, etcd.WithPrefix("contended/"), etcd.WithIdleLeases(bound))
	ctx := ctxFor(t, time.Minute)
	var wg sync.WaitGroup
	var taken atomic.Int64
	for g := range 6 {
		wg.Go(func() {
			for i := range 20 {
				resource, token := fmt.Sprint(i%3), fmt.Sprint(g, "-", i)
				ttl := time.Duration(5+g%2) * time.Second
				err := s.Acquire(ctx, resource, token, ttl)
				if errors.Is(err, lock.ErrNotAcquired) {
					continue
				}
				if err != nil {
					t.Errorf("Acquire(%s, %s) = %v", resource, token, err)
					return
				}
				taken.Add(1)
				checkOneKeyPerLease(t, client)
				if err := s.Release(ctx, resource, token); err != nil {
					t.Errorf("Release(%s, %s) of a lock held for less than its TTL = %v; want nil", resource, token, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if taken.Load() == 0 {
		t.Fatal("no acquisition succeeded")
	}
	if n := leases(t, client); n > bound {
		t.Errorf("%d leases left with every lock released; want at most %d (WithIdleLeases)", n, bound)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if n := leases(t, client); n != 0 {
		t.Errorf("%d leases left after Close; want 0", n)
	}
}

// checkOneKeyPerLease fails the test if a lease of the cluster holds more
// than one key.
func checkOneKeyPerLease(t *testing.T, client *clientv3.Client) {
	t.Helper()
	resp, err := client.Leases(ctxFor(t, 5*time.Second))
	if err != nil {
		t.Errorf("listing leases: %v", err)
		return
	}
	for _, l := range resp.Leases {
		ttl, err := client.TimeToLive(ctxFor(t, 5*time.Second), l.ID, clientv3.WithAttachedKeys())
		if err != nil {
			continue // revoked since it was listed
		}
		if len(ttl.Keys) > 1 {
			t.Errorf("lease %x holds %d keys: %q; want at most one", l.ID, len(ttl.Keys), ttl.Keys)
		}
	}
}

// acquire takes the lock on r for token a in s, whose prefix is prefix,
// and returns its lease.
func acquire(t *testing.T, s *etcd.Store, client *clientv3.Client, prefix string) clientv3.LeaseID {
	t.Helper()
	if err := s.Acquire(ctxFor(t, 10*time.Second), "r", "a", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return leaseOf(t, client, etcd.LockKey(prefix, "r", "a"))
}
