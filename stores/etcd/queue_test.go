package etcd_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

// inLine is an AcquireQueued running in a goroutine.
type inLine struct {
	queued chan struct{} // closed when it calls Queued
	done   chan struct{} // closed when it returns
	fence  uint64
	err    error
}

// queue runs AcquireQueued(r, token) on s in a goroutine, with a long
// wait, and waits until it is in line.
func queue(t *testing.T, ctx context.Context, s *etcd.Store, r, token string, ttl time.Duration) *inLine {
	t.Helper()
	c := &inLine{queued: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.fence, c.err = s.AcquireQueued(ctx, lock.QueuedAcquisition{
			Resource: r, Token: token, TTL: ttl, Fenced: true, Wait: time.Minute,
			Queued: func() { close(c.queued) },
		})
	}()
	select {
	case <-c.queued:
	case <-c.done:
		t.Fatalf("AcquireQueued(%s, %s) = %d, %v; want it to wait in line", r, token, c.fence, c.err)
	case <-time.After(10 * time.Second):
		t.Fatalf("AcquireQueued(%s, %s) not in line after 10s", r, token)
	}
	return c
}

// result waits for the call to return.
func (c *inLine) result(t *testing.T) (uint64, error) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("AcquireQueued still waiting 10s after its turn came")
	}
	return c.fence, c.err
}

// waiting fails t if the call has returned.
func (c *inLine) waiting(t *testing.T, while string) {
	t.Helper()
	select {
	case <-c.done:
		t.Fatalf("AcquireQueued = %d, %v %s; want it to wait in line", c.fence, c.err, while)
	default:
	}
}

// A Release by a token that waits in line takes it out of the line and
// answers ErrNotHeld: it did not hold the lock. The queued call then
// returns ErrNotAcquired.
func TestReleaseOfAWaitingToken(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client, etcd.WithPrefix("queue-release/"))
	ctx := ctxFor(t, 30*time.Second)
	// A lease of a released lock, kept by the store, for b to take: it
	// held a lock, and must not make b's key look like one.
	if err := s.Acquire(ctx, "other", "x", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "other", "x"); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, "r", "a", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	b := queue(t, ctx, s, "r", "b", 10*time.Second)
	if err := s.Release(ctx, "r", "b"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(r, b) while b waits in line = %v; want ErrNotHeld", err)
	}
	if _, err := b.result(t); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("AcquireQueued(r, b) after Release(r, b) = %v; want ErrNotAcquired: b is out of line", err)
	}
	if n := keys(t, client, etcd.LockKey("queue-release/", "r", "")); n != 1 {
		t.Errorf("keys of r after Release(r, b) = %d; want 1, a's", n)
	}
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Errorf("Release(r, a) = %v; want nil", err)
	}
	if held, err := s.Exists(ctx, "r"); err != nil || held {
		t.Errorf("Exists(r) after Release(r, a) = %v, %v; want false: b left the line", held, err)
	}
}

// Extend of a token that waits in line is ErrNotHeld, and leaves the
// lease of the holder alone.
func TestExtendOfAWaitingToken(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client)
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	b := queue(t, ctx, s, "r", "b", 10*time.Second)
	for _, ttl := range []time.Duration{10 * time.Second, 20 * time.Second} {
		if err := s.Extend(ctx, "r", "b", ttl); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Extend(r, b, %v) while b waits in line = %v; want ErrNotHeld", ttl, err)
		}
	}
	b.waiting(t, "after Extend(r, b)")
	if err := s.Extend(ctx, "r", "a", 10*time.Second); err != nil {
		t.Errorf("Extend(r, a) by the holder = %v; want nil", err)
	}
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.result(t); err != nil {
		t.Fatalf("AcquireQueued(r, b) after Release(r, a) = %v", err)
	}
	if err := s.Extend(ctx, "r", "b", 10*time.Second); err != nil {
		t.Errorf("Extend(r, b) once handed the lock = %v; want nil", err)
	}
	if err := s.Release(ctx, "r", "b"); err != nil {
		t.Errorf("Release(r, b) = %v", err)
	}
}

// Holder, TTL, LastFence and ForceRelease read the head of the line, the
// key of the lowest create revision, not the first key by name: here the
// holder's token sorts after the waiter's.
func TestReadsTakeTheHeadOfTheLine(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client)
	ctx := ctxFor(t, 30*time.Second)
	const first, second = "h~zed", "h~abe" // arrival order, opposite to the keys' order
	fence, err := s.AcquireFenced(ctx, "r", first, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b := queue(t, ctx, s, "r", second, 20*time.Second)
	if h, ok, err := s.Holder(ctx, "r"); err != nil || !ok || h != "zed" {
		t.Errorf("Holder(r) = %q, %v, %v; want zed, true: the first to arrive", h, ok, err)
	}
	if d, ok, err := s.TTL(ctx, "r"); err != nil || !ok || d > 5*time.Second {
		t.Errorf("TTL(r) = %v, %v, %v; want at most 5s, the holder's, not the waiter's 20s", d, ok, err)
	}
	if last, ok, err := s.LastFence(ctx, "r"); err != nil || !ok || last != fence {
		t.Errorf("LastFence(r) = %d, %v, %v; want %d, the holder's", last, ok, err, fence)
	}
	if ok, err := s.ForceRelease(ctx, "r"); err != nil || !ok {
		t.Fatalf("ForceRelease(r) = %v, %v; want true", ok, err)
	}
	got, err := b.result(t)
	if err != nil {
		t.Fatalf("AcquireQueued(r, %s) after ForceRelease(r) = %v; want the lock, handed over", second, err)
	}
	if got <= fence {
		t.Errorf("fence of the lock handed over = %d; want more than the forced-out holder's %d", got, fence)
	}
	if h, ok, err := s.Holder(ctx, "r"); err != nil || !ok || h != "abe" {
		t.Errorf("Holder(r) after ForceRelease = %q, %v, %v; want abe, true", h, ok, err)
	}
	if err := s.Release(ctx, "r", second); err != nil {
		t.Errorf("Release(r, %s) = %v", second, err)
	}
}

// A waiter keeps its place for longer than its TTL: its lease is renewed
// while it waits.
func TestWaiterOutlivesItsTTL(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client, etcd.WithPrefix("queue-outlives/"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "a", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	b := queue(t, ctx, s, "r", "b", etcdtest.MinTTL)
	base := s.Renewals()
	// Three times its TTL: long past the expiry of a lease not renewed
	// (etcd notices expired leases every half second).
	<-time.After(3 * etcdtest.MinTTL)
	if got := s.Renewals() - base; got < 3 {
		t.Errorf("renewals while b waited three times its TTL = %d; want one every third of the TTL at most", got)
	}
	b.waiting(t, "past its TTL")
	if n := keys(t, client, etcd.LockKey("queue-outlives/", "r", "")); n != 2 {
		t.Fatalf("keys of r after b waited three times its TTL = %d; want 2: a's and b's", n)
	}
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.result(t); err != nil {
		t.Fatalf("AcquireQueued(r, b) after Release(r, a) = %v; want the lock", err)
	}
	if err := s.Release(ctx, "r", "b"); err != nil {
		t.Errorf("Release(r, b) = %v; want nil: b holds r", err)
	}
}

// A handoff is not a release: WaitRelease keeps waiting while the lock
// passes down the line, and returns once the resource is free.
func TestWaitReleaseSleepsThroughAHandoff(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client)
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	b := queue(t, ctx, s, "r", "b", 10*time.Second)
	released := make(chan error, 1)
	go func() { released <- s.WaitRelease(ctx, "r") }()
	waitFor(t, "WaitRelease(r) to wait", func() bool { return s.Waiting("r") == 1 })
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.result(t); err != nil {
		t.Fatalf("AcquireQueued(r, b) after Release(r, a) = %v", err)
	}
	// The watch woke b on a's deletion: had it taken that deletion for a
	// release, it would have woken the caller of WaitRelease then too.
	if n := s.Waiting("r"); n != 1 {
		t.Fatalf("callers of WaitRelease(r) waiting once a's lock was handed to b = %d; want 1: a handoff is not a release", n)
	}
	if err := s.Release(ctx, "r", "b"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-released:
		if err != nil {
			t.Errorf("WaitRelease(r) = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitRelease(r) still waiting 10s after r was released")
	}
}

// txnCounter is a clientv3.KV that counts the requests that may write
// sent through it (transactions, puts and deletions), and the
// transactions whose comparisons failed.
type txnCounter struct {
	clientv3.KV
	all, failed *atomic.Int64
}

func (k txnCounter) Txn(ctx context.Context) clientv3.Txn {
	return &countedTxn{Txn: k.KV.Txn(ctx), k: k}
}

func (k txnCounter) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	k.all.Add(1)
	return k.KV.Put(ctx, key, val, opts...)
}

func (k txnCounter) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	k.all.Add(1)
	return k.KV.Delete(ctx, key, opts...)
}

type countedTxn struct {
	clientv3.Txn
	k txnCounter
}

func (t *countedTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.Txn = t.Txn.If(cs...); return t }
func (t *countedTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Then(ops...); return t }
func (t *countedTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

func (t *countedTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	t.k.all.Add(1)
	if err == nil && !resp.Succeeded {
		t.k.failed.Add(1)
	}
	return resp, err
}

// Waiters on several stores, each on a client of its own, are served in
// the order they got in line, and without a herd: each release hands the
// lock over with its own deletion alone — no waiter makes an attempt
// that fails, nor any write at all, to take it.
func TestLineAcrossStores(t *testing.T) {
	const n = 4
	endpoints := etcdtest.Shared(t).Endpoints()
	var all, failed atomic.Int64
	stores := make([]*etcd.Store, n)
	for i := range stores {
		c := clientOf(t, endpoints...)
		c.KV = txnCounter{KV: c.KV, all: &all, failed: &failed}
		stores[i] = newStore(t, c, etcd.WithPrefix("queue-stores/"))
	}
	ctx := ctxFor(t, 30*time.Second)
	tokens := []string{"w0", "w1", "w2", "w3"}
	last, err := stores[0].AcquireFenced(ctx, "r", tokens[0], 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	line := make([]*inLine, n)
	for i := 1; i < n; i++ {
		line[i] = queue(t, ctx, stores[i], "r", tokens[i], 10*time.Second)
	}
	for i := 1; i < n; i++ {
		before, failedBefore := all.Load(), failed.Load()
		if err := stores[i-1].Release(ctx, "r", tokens[i-1]); err != nil {
			t.Fatalf("Release(r, %s) = %v", tokens[i-1], err)
		}
		fence, err := line[i].result(t)
		if err != nil {
			t.Fatalf("AcquireQueued(r, %s) after Release(r, %s) = %v; want the lock", tokens[i], tokens[i-1], err)
		}
		if fence <= last {
			t.Errorf("fence of %s = %d; want more than %d, its predecessor's", tokens[i], fence, last)
		}
		last = fence
		for j := i + 1; j < n; j++ {
			line[j].waiting(t, "while an earlier waiter holds r")
		}
		if got := failed.Load() - failedBefore; got != 0 {
			t.Errorf("handoff %d: %d transactions whose comparisons failed; want none: waiters must not race for the lock", i, got)
		}
		if got := all.Load() - before; got != 1 {
			t.Errorf("handoff %d: %d writes; want 1, the release's: the lock passes without a write of the waiter's", i, got)
		}
	}
	if err := stores[n-1].Release(ctx, "r", tokens[n-1]); err != nil {
		t.Fatal(err)
	}
	if held, err := stores[0].Exists(ctx, "r"); err != nil || held {
		t.Errorf("Exists(r) once the line is through = %v, %v; want false", held, err)
	}
}

// Many queued acquisitions on one store and on several hold the lock one
// at a time, and leave nothing behind.
func TestQueueMutualExclusion(t *testing.T) {
	endpoints := etcdtest.Shared(t).Endpoints()
	shared := newStore(t, clientOf(t, endpoints...), etcd.WithPrefix("queue-mutex/"))
	stores := []*etcd.Store{shared, shared, shared}
	for range 3 {
		stores = append(stores, newStore(t, clientOf(t, endpoints...), etcd.WithPrefix("queue-mutex/")))
	}
	ctx := ctxFor(t, 60*time.Second)
	var holders atomic.Int32
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			for j := range 10 {
				who := string(rune('a'+i)) + string(rune('0'+j))
				token := "h~" + who
				_, err := s.AcquireQueued(ctx, lock.QueuedAcquisition{Resource: "r", Token: token, TTL: 10 * time.Second, Wait: time.Minute})
				if err != nil {
					t.Errorf("AcquireQueued(r, %s) = %v", token, err)
					return
				}
				if n := holders.Add(1); n != 1 {
					t.Errorf("%d holders of r at once", n)
				}
				// etcd's word on it, within the critical section.
				if h, ok, err := s.Holder(ctx, "r"); err != nil || !ok || h != who {
					t.Errorf("Holder(r) while %s holds it = %q, %v, %v", who, h, ok, err)
				}
				holders.Add(-1)
				if err := s.Release(ctx, "r", token); err != nil {
					t.Errorf("Release(r, %s) = %v", token, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := keys(t, clientOf(t, endpoints...), etcd.LockKey("queue-mutex/", "r", "")); n != 0 {
		t.Errorf("keys of r after every lock was released = %d; want 0", n)
	}
}

// A waiter whose key goes with its lease (expired, or revoked here) is out
// of line: it answers ErrNotAcquired, and never takes the lock.
func TestWaiterWhoseKeyIsGoneNeverHolds(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client, etcd.WithPrefix("queue-gone/"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	b := queue(t, ctx, s, "r", "b", 10*time.Second)
	resp, err := client.Get(ctx, etcd.LockKey("queue-gone/", "r", "b"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("b's key = %v, %v; want it in line", resp, err)
	}
	if _, err := client.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.result(t); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("AcquireQueued(r, b) once its lease was revoked = %v; want ErrNotAcquired: out of line", err)
	}
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if held, err := s.Exists(ctx, "r"); err != nil || held {
		t.Errorf("Exists(r) after Release(r, a) = %v, %v; want false: b was out of line", held, err)
	}
}
