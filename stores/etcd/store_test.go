package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/stores/etcd"
)

func TestNewRefusesBadInput(t *testing.T) {
	if _, err := etcd.New(nil); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New(nil) = %v; want ErrInvalid", err)
	}
	client := clientOf(t, deadEndpoint(t))
	for _, o := range []struct {
		name string
		opt  etcd.Option
	}{
		{"WithMinTTL(500ms)", etcd.WithMinTTL(500 * time.Millisecond)},
		{"WithMinTTL(1.5s)", etcd.WithMinTTL(1500 * time.Millisecond)},
		{"WithMinTTL(2500000h0m1s)", etcd.WithMinTTL(clientv3.MaxLeaseTTL*time.Second + time.Second)},
		{"WithTimeout(-1s)", etcd.WithTimeout(-time.Second)},
		{"WithIdleLeases(-1)", etcd.WithIdleLeases(-1)},
		{`WithName("")`, etcd.WithName("")},
	} {
		_, err := etcd.New(client, o.opt)
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(fmt.Sprint(err), o.name) {
			t.Errorf("New(client, %s) = %v; want ErrInvalid naming %s", o.name, err, o.name)
		}
	}
	if _, err := etcd.New(client, nil, etcd.WithName("e")); err != nil {
		t.Errorf("New(client, nil, WithName(e)) = %v; want nil (nil options are ignored, as by the other stores)", err)
	}
}

// deadEndpoint returns an endpoint where nothing listens.
func deadEndpoint(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TTLs etcd cannot honour are refused before anything is sent: the store
// here talks to an endpoint where nothing listens, so a call that sent
// anything would block until its context ends instead.
func TestTTLRefusedBeforeSending(t *testing.T) {
	s, err := etcd.New(clientOf(t, deadEndpoint(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 30*time.Second)
	for _, ttl := range []time.Duration{-time.Second, 0, time.Millisecond, etcd.DefaultMinTTL - time.Second, clientv3.MaxLeaseTTL*time.Second + time.Second} {
		if err := s.Acquire(ctx, "r", "a", ttl); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("Acquire(r, a, %v) = %v; want ErrInvalid", ttl, err)
		}
		if err := s.Extend(ctx, "r", "a", ttl); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("Extend(r, a, %v) = %v; want ErrInvalid", ttl, err)
		}
	}
	if err := s.Acquire(ctx, "r", "a", etcd.DefaultMinTTL-time.Second); !strings.Contains(err.Error(), "at least 2s") {
		t.Errorf("Acquire with a TTL below the minimum = %v; want the error to name the minimum (2s)", err)
	}
}

// A cluster whose shortest lease is longer than the store's minimum (a
// one-second election timeout: two seconds) would silently lengthen a
// one-second lock: the store refuses it, leaves nothing behind, and
// refuses such TTLs from then on.
func TestClusterMinimumTTL(t *testing.T) {
	c := etcdtest.Start(t, 1, &etcdtest.Options{ElectionTimeout: time.Second})
	client := clientOf(t, c.Endpoints()...)
	s := newStore(t, client) // minimum 1s
	ctx := ctxFor(t, 30*time.Second)
	err := s.Acquire(ctx, "r", "a", time.Second)
	if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "2s") {
		t.Fatalf("Acquire(r, a, 1s) on a cluster whose shortest lease is 2s = %v; want ErrInvalid naming 2s", err)
	}
	if got := s.MinTTL(); got != 2*time.Second {
		t.Errorf("MinTTL() after the cluster lengthened a lease = %v; want 2s", got)
	}
	if held, err := s.Exists(ctx, "r"); err != nil || held {
		t.Errorf("Exists(r) after the refused Acquire = %v, %v; want false", held, err)
	}
	if n := leases(t, client); n != 0 {
		t.Errorf("%d leases left after the refused Acquire; want 0", n)
	}
	if err := s.Acquire(ctx, "r", "a", 2*time.Second); err != nil {
		t.Errorf("Acquire(r, a, 2s) = %v; want nil", err)
	}
}

// leases counts the leases of the cluster.
func leases(t *testing.T, client *clientv3.Client) int {
	t.Helper()
	resp, err := client.Leases(ctxFor(t, 5*time.Second))
	if err != nil {
		t.Fatalf("listing leases: %v", err)
	}
	return len(resp.Leases)
}

// keys counts the keys under prefix.
func keys(t *testing.T, client *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := client.Get(ctxFor(t, 5*time.Second), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("counting keys: %v", err)
	}
	return resp.Count
}

// Nothing is left in etcd per resource after a release, a refused
// acquisition or an expiry: the key goes, and its lease is revoked or kept
// for the store's next lock, up to the store's bound (one here); Close
// revokes the kept ones. On a cluster of its own, where every lease is the
// test's.
func TestNothingLeft(t *testing.T) {
	client := clientOf(t, etcdtest.Start(t, 1, nil).Endpoints()...)
	s := newStore(t, client, etcd.WithPrefix("nothing-left/"), etcd.WithIdleLeases(1))
	ctx := ctxFor(t, 30*time.Second)
	before := leases(t, client)
	want := func(when string, n int) {
		t.Helper()
		if got := leases(t, client); got != before+n {
			t.Errorf("%d leases %s; want %d", got-before, when, n)
		}
	}

	if err := s.Acquire(ctx, "released", "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "released", "a"); err != nil {
		t.Fatal(err)
	}
	want("after a release (its lease kept)", 1)
	if err := s.Acquire(ctx, "held", "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	want("with one lock held on the kept lease", 1)
	if err := s.Acquire(ctx, "held", "b", 10*time.Second); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire(held, b) = %v; want ErrNotAcquired", err)
	}
	want("with one lock held and the refused acquisition's lease kept", 2)
	if err := s.Release(ctx, "held", "a"); err != nil {
		t.Fatal(err)
	}
	want("after a release with the pool full (its lease revoked)", 1)
	start := time.Now()
	if err := s.Acquire(ctx, "expired", "a", time.Second); err != nil {
		t.Fatal(err)
	}
	for keys(t, client, "nothing-left/") > 0 {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the key of a 1s lock still exists 5s later")
		}
		time.Sleep(50 * time.Millisecond)
	}
	want("after every lock was released or expired (one kept)", 1)
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	want("after Close", 0)
	if err := s.Acquire(ctx, "closed", "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "closed", "a"); err != nil {
		t.Fatal(err)
	}
	want("after a release on the closed store (its lease revoked)", 0)
}

// Extending with another TTL moves the lock to a lease of that TTL: the
// lock keeps its key, its token and its fence, and the old lease goes.
func TestExtendWithAnotherTTL(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client, etcd.WithPrefix("extend-ttl/"))
	ctx := ctxFor(t, 30*time.Second)
	fence, err := s.AcquireFenced(ctx, "r", "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	first := leaseOf(t, client, etcd.LockKey("extend-ttl/", "r", "a"))
	if err := s.Extend(ctx, "r", "a", 5*time.Second); err != nil {
		t.Fatalf("Extend(r, a, 5s) of a 1s lock = %v; want nil", err)
	}
	if d, held, err := s.TTL(ctx, "r"); err != nil || !held || d < 3*time.Second {
		t.Errorf("TTL(r) after Extend(r, a, 5s) = %v, %v, %v; want more than 3s", d, held, err)
	}
	second := leaseOf(t, client, etcd.LockKey("extend-ttl/", "r", "a"))
	if second == first || attached(t, client, first) > 0 {
		t.Errorf("the lock's lease is %x after the extension, %x before, which holds %d keys; want a new lease, and the old one empty", second, first, attached(t, client, first))
	}
	if err := s.Extend(ctx, "r", "b", 5*time.Second); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Extend(r, b) = %v; want ErrNotHeld", err)
	}
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatalf("Release(r, a) after the extension = %v", err)
	}
	if n := attached(t, client, second); n > 0 {
		t.Errorf("lease %x of the released lock holds %d keys; want none", second, n)
	}
	next, err := s.AcquireFenced(ctx, "r", "c", time.Second)
	if err != nil || next <= fence {
		t.Errorf("AcquireFenced(r, c) after the release = %d, %v; want a fence > %d", next, err, fence)
	}
	if err := s.Release(ctx, "r", "c"); err != nil {
		t.Fatal(err)
	}
}

// leaseOf returns the lease of key, which must exist.
func leaseOf(t *testing.T, client *clientv3.Client, key string) clientv3.LeaseID {
	t.Helper()
	resp, err := client.Get(ctxFor(t, 5*time.Second), key)
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("Get(%s) = %v, %v; want the key", key, resp, err)
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

// timeToLive returns the remaining TTL of a lease (-1 if it does not
// exist) and the number of keys attached to it.
func timeToLive(t *testing.T, client *clientv3.Client, id clientv3.LeaseID) (int64, int) {
	t.Helper()
	resp, err := client.TimeToLive(ctxFor(t, 5*time.Second), id, clientv3.WithAttachedKeys())
	if err != nil {
		t.Fatalf("TimeToLive(%x): %v", id, err)
	}
	return resp.TTL, len(resp.Keys)
}

// alive reports whether a lease exists.
func alive(t *testing.T, client *clientv3.Client, id clientv3.LeaseID) bool {
	t.Helper()
	ttl, _ := timeToLive(t, client, id)
	return ttl >= 0
}

// attached returns the number of keys attached to a lease.
func attached(t *testing.T, client *clientv3.Client, id clientv3.LeaseID) int {
	t.Helper()
	_, n := timeToLive(t, client, id)
	return n
}

// A reply lost after the request was sent is an error, never a lock
// outcome; a release by token then cleans up whatever it did.
func TestLostReplies(t *testing.T) {
	cluster := etcdtest.Shared(t)
	p, err := faultproxy.New(cluster.Members[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	s := newStore(t, clientOf(t, p.Addr()), etcd.WithPrefix("lost-replies/"))
	observer := newStore(t, clientOf(t, cluster.Endpoints()...), etcd.WithPrefix("lost-replies/"))
	ctx := ctxFor(t, 30*time.Second)

	lost := func(call string, f func(ctx context.Context) error, outcome error) {
		t.Helper()
		p.Set(faultproxy.ToClient, faultproxy.Drop())
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err := f(cctx)
		cancel()
		p.Heal()
		if err == nil || errors.Is(err, outcome) {
			t.Errorf("%s with its reply lost = %v; want an error other than %v", call, err, outcome)
		}
	}
	lost("Acquire(r, a)", func(ctx context.Context) error { return s.Acquire(ctx, "r", "a", 10*time.Second) }, lock.ErrNotAcquired)
	if err := observer.Release(ctx, "r", "a"); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(r, a) after the lost acquisition = %v; want nil or ErrNotHeld", err)
	}
	if held, err := observer.Exists(ctx, "r"); err != nil || held {
		t.Errorf("Exists(r) after a release by token = %v, %v; want false", held, err)
	}

	if err := observer.Acquire(ctx, "r", "b", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	lost("Release(r, b)", func(ctx context.Context) error { return s.Release(ctx, "r", "b") }, lock.ErrNotHeld)
	lost("Extend(r, b)", func(ctx context.Context) error { return s.Extend(ctx, "r", "b", 10*time.Second) }, lock.ErrNotHeld)
}

// A name too long for etcd's requests (an acquisition carries its key
// three times, against etcd's limit of 1.5 MiB, and the client's gRPC
// limit of 2 MiB) is refused with lock.ErrInvalid, etcd's or gRPC's error
// in the chain: never contention, nor a failure that Lock would retry
// until its context ends, as the refusal is certain and would come again.
// It leaves nothing behind: no key, no lease.
func TestNameTooLongForARequest(t *testing.T) {
	client := clientOf(t, etcdtest.Start(t, 1, nil).Endpoints()...)
	s := newStore(t, client, etcd.WithPrefix("long/"))
	ctx := ctxFor(t, 30*time.Second)
	locker, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{600 << 10, 800 << 10} {
		r := strings.Repeat("r", size)
		err := s.Acquire(ctx, r, "a", 2*time.Second)
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "large") {
			t.Errorf("Acquire of a %d KiB name = %v; want ErrInvalid with etcd's or gRPC's error", size>>10, err)
		}
		if n := keys(t, client, "long/"); n != 0 {
			t.Errorf("%d keys after the refused Acquire of a %d KiB name; want 0", n, size>>10)
		}
		if n := leases(t, client); n != 0 {
			t.Errorf("%d leases after the refused Acquire of a %d KiB name; want 0", n, size>>10)
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = locker.Lock(lctx, r, 2*time.Second)
		cancel()
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("Lock of a %d KiB name = %v; want ErrInvalid at once", size>>10, err)
		}
	}
}
