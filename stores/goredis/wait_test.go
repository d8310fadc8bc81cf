package goredis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/goredis"
)

// queued returns how many entries the waiters' queue of the lock at key
// holds on srv: one per waiting caller in line.
func queued(t *testing.T, srv *redistest.Server, key string) int64 {
	t.Helper()
	n, err := srv.Do("LLEN", key+":waiters").AsInt64()
	if err != nil {
		t.Fatalf("LLEN %s:waiters = %v", key, err)
	}
	return n
}

// shardSubscribers returns how many connections are subscribed to
// releases of the lock at key on srv.
func shardSubscribers(t *testing.T, srv *redistest.Server, key string) int64 {
	t.Helper()
	channels, err := srv.Do("PUBSUB", "SHARDCHANNELS", key+":waiters:*").AsStrSlice()
	if err != nil {
		t.Fatalf("PUBSUB SHARDCHANNELS = %v", err)
	}
	var n int64
	for _, ch := range channels {
		v, err := srv.Do("PUBSUB", "SHARDNUMSUB", ch).ToArray()
		if err != nil || len(v) != 2 {
			t.Fatalf("PUBSUB SHARDNUMSUB %s = %v, %v", ch, v, err)
		}
		c, err := v[1].AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		n += c
	}
	return n
}

// noSubscriptionsLeft checks that nothing of the waits stays behind.
func noSubscriptionsLeft(t *testing.T, srv *redistest.Server, key string) {
	t.Helper()
	eventually(t, "unsubscribed on the server", func() bool { return shardSubscribers(t, srv, key) == 0 })
	eventually(t, "unsubscribed in the process", func() bool { return goredis.Subscriptions() == 0 })
}

func TestWaitFreeReturnsAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, clientOf(t, srv))
	if err := s.WaitRelease(ctxFor(t, 10*time.Second), "free"); err != nil {
		t.Fatalf("WaitRelease of a free resource = %v; want nil", err)
	}
}

// TestWaitersTakeTurns: waiters of one process share one subscription,
// and each release wakes exactly one of them: it pops one entry from the
// queue, and one caller returns.
func TestWaitersTakeTurns(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, clientOf(t, srv), goredis.WithPrefix("turns:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	const waiters = 4
	woken := make(chan error, waiters)
	for range waiters {
		go func() { woken <- s.WaitRelease(ctx, "r") }()
	}
	eventually(t, "all in line", func() bool { return queued(t, srv, "turns:{r}") == waiters })
	if n := shardSubscribers(t, srv, "turns:{r}"); n != 1 {
		t.Fatalf("%d subscriptions for the waiters of one process; want 1", n)
	}
	for turn := range waiters {
		select {
		case err := <-woken:
			t.Fatalf("turn %d: WaitRelease returned %v while r is held for a minute", turn, err)
		default:
		}
		if err := s.Release(ctx, "r", "holder"); err != nil {
			t.Fatal(err)
		}
		if err := <-woken; err != nil { // bounded by ctx
			t.Fatalf("turn %d: WaitRelease after Release = %v; want nil", turn, err)
		}
		if n := queued(t, srv, "turns:{r}"); n != int64(waiters-turn-1) {
			t.Fatalf("turn %d: %d waiters in line after a release; want %d: a release wakes one", turn, n, waiters-turn-1)
		}
		// The woken caller would take the lock now; the others wait on.
		if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	noSubscriptionsLeft(t, srv, "turns:{r}")
}

// TestWaitWakesOnExpiry: a lock that is never released wakes its waiter
// when it expires, extended or not.
func TestWaitWakesOnExpiry(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, clientOf(t, srv))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitRelease(ctx, "r") }()
	if err := s.Extend(ctx, "r", "holder", 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitRelease = %v", err)
	}
	if held, err := s.Exists(ctx, "r"); err != nil || held {
		t.Fatalf("Exists(r) when WaitRelease returned = %v, %v; want false", held, err)
	}
}

// TestWaitCanceledPassesWake: a waiter whose context ends returns its
// error and leaves the line, so the next release wakes the one behind.
func TestWaitCanceledPassesWake(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, clientOf(t, srv), goredis.WithPrefix("cancel:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	first, cancelFirst := context.WithCancel(ctx)
	firstDone := make(chan error, 1)
	go func() { firstDone <- s.WaitRelease(first, "r") }()
	eventually(t, "first in line", func() bool { return queued(t, srv, "cancel:{r}") == 1 })
	secondDone := make(chan error, 1)
	go func() { secondDone <- s.WaitRelease(ctx, "r") }()
	eventually(t, "second in line", func() bool { return queued(t, srv, "cancel:{r}") == 2 })
	cancelFirst()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("first WaitRelease after its ctx was canceled = %v; want context.Canceled", err)
	}
	if err := s.Release(ctx, "r", "holder"); err != nil {
		t.Fatal(err)
	}
	if err := <-secondDone; err != nil { // bounded by ctx
		t.Fatalf("second WaitRelease = %v; want nil", err)
	}
	noSubscriptionsLeft(t, srv, "cancel:{r}")
}

// TestWaitServerDies: a waiter learns at once that its server died.
func TestWaitServerDies(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, clientOf(t, srv), goredis.WithPrefix("dies:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitRelease(ctx, "r") }()
	eventually(t, "in line", func() bool { return queued(t, srv, "dies:{r}") == 1 })
	srv.Kill()
	if err := <-done; err == nil || ctx.Err() != nil {
		t.Fatalf("WaitRelease when the server died = %v (ctx %v); want an error before the ctx ends", err, ctx.Err())
	}
}

// TestWaitCluster: on a cluster, the subscription lives on the lock's
// node and a release wakes it.
func TestWaitCluster(t *testing.T) {
	cc := clusterClientOf(t, redistest.SharedCluster(t))
	s := newStore(t, cc, goredis.WithPrefix("clusterwait:"))
	ctx := ctxFor(t, 30*time.Second)
	for _, r := range []string{"a", "b", "c", "d"} { // spread over the nodes
		if err := s.Acquire(ctx, r, "holder", time.Minute); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.WaitRelease(ctx, r) }()
		eventually(t, "in line", func() bool { return cc.LLen(ctx, "clusterwait:{"+r+"}:waiters").Val() == 1 })
		if err := s.Release(ctx, r, "holder"); err != nil { // held for a minute: only the release can wake it
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("WaitRelease(%s) on a cluster = %v; want nil", r, err)
		}
		eventually(t, "unsubscribed", func() bool { return goredis.Subscriptions() == 0 })
	}
}
