package goredis_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/goredis"
	rueidisstore "github.com/lockkit/lock/stores/redis"
)

// The two Redis stores speak one protocol on the server (package
// redisstore): on one server and prefix they share locks, fences and
// waiters' queues.

func interopStores(t *testing.T, prefix string) (*redistest.Server, *goredis.Store, *rueidisstore.Store) {
	t.Helper()
	srv := redistest.Start(t)
	g := newStore(t, clientOf(t, srv), goredis.WithPrefix(prefix))
	r, err := rueidisstore.New(srv.NewClient(t), rueidisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return srv, g, r
}

func TestInteropLocks(t *testing.T) {
	_, g, r := interopStores(t, "interop:")
	ctx := ctxFor(t, 30*time.Second)

	// Taken through rueidis: seen, refused, and released by token through
	// go-redis.
	if _, err := r.AcquireFenced(ctx, "res", "rtok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if held, err := g.Exists(ctx, "res"); err != nil || !held {
		t.Errorf("goredis Exists of a rueidis lock = %v, %v; want true", held, err)
	}
	if ttl, held, err := g.TTL(ctx, "res"); err != nil || !held || ttl <= 0 || ttl > time.Minute {
		t.Errorf("goredis TTL of a rueidis lock = %v, %v, %v; want held, up to a minute", ttl, held, err)
	}
	if err := g.Acquire(ctx, "res", "gtok", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("goredis Acquire of a rueidis lock = %v; want lock.ErrNotAcquired", err)
	}
	if _, err := g.AcquireFenced(ctx, "res", "gtok", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("goredis AcquireFenced of a rueidis lock = %v; want lock.ErrNotAcquired", err)
	}
	if err := g.Release(ctx, "res", "gtok"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("goredis Release of a rueidis lock under another token = %v; want lock.ErrNotHeld", err)
	}
	if err := g.Extend(ctx, "res", "rtok", time.Minute); err != nil {
		t.Errorf("goredis Extend of a rueidis lock under its token = %v; want nil", err)
	}
	if err := g.Release(ctx, "res", "rtok"); err != nil {
		t.Errorf("goredis Release of a rueidis lock under its token = %v; want nil", err)
	}
	if held, err := r.Exists(ctx, "res"); err != nil || held {
		t.Errorf("rueidis Exists after the goredis release = %v, %v; want false", held, err)
	}

	// Fences go on increasing whichever store hands them out.
	var last uint64
	for i := range 4 {
		var (
			fence uint64
			err   error
			rel   func() error
		)
		if i%2 == 0 {
			fence, err = g.AcquireFenced(ctx, "fenced", "tok", time.Minute)
			rel = func() error { return r.Release(ctx, "fenced", "tok") }
		} else {
			fence, err = r.AcquireFenced(ctx, "fenced", "tok", time.Minute)
			rel = func() error { return g.Release(ctx, "fenced", "tok") }
		}
		if err != nil {
			t.Fatal(err)
		}
		if fence <= last {
			t.Errorf("acquisition %d: fence %d after %d; want strictly increasing across both stores", i, fence, last)
		}
		last = fence
		if err := rel(); err != nil {
			t.Fatal(err)
		}
	}

	// Taken through go-redis: refused through rueidis.
	if err := g.Acquire(ctx, "res2", "gtok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := r.Acquire(ctx, "res2", "rtok", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("rueidis Acquire of a goredis lock = %v; want lock.ErrNotAcquired", err)
	}
}

// TestInteropWait: a go-redis waiter is woken by a rueidis release, and a
// rueidis waiter by a go-redis release; each release wakes one of them,
// in the order they got in line.
func TestInteropWait(t *testing.T) {
	srv, g, r := interopStores(t, "interopwait:")
	ctx := ctxFor(t, 30*time.Second)
	if err := r.Acquire(ctx, "res", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	gDone := make(chan error, 1)
	go func() { gDone <- g.WaitRelease(ctx, "res") }()
	eventually(t, "the goredis waiter in line", func() bool { return queued(t, srv, "interopwait:{res}") == 1 })
	rDone := make(chan error, 1)
	go func() { rDone <- r.WaitRelease(ctx, "res") }()
	eventually(t, "the rueidis waiter in line", func() bool { return queued(t, srv, "interopwait:{res}") == 2 })

	// The lock is held for a minute: only a release can wake them.
	if err := r.Release(ctx, "res", "holder"); err != nil {
		t.Fatal(err)
	}
	if err := <-gDone; err != nil {
		t.Fatalf("goredis WaitRelease after a rueidis Release = %v; want nil", err)
	}
	if n := queued(t, srv, "interopwait:{res}"); n != 1 {
		t.Fatalf("%d waiters in line after one release; want 1: a release wakes one", n)
	}
	select {
	case err := <-rDone:
		t.Fatalf("the rueidis waiter returned %v on a release that woke the goredis one first in line", err)
	default:
	}
	if err := g.Acquire(ctx, "res", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := g.Release(ctx, "res", "holder"); err != nil {
		t.Fatal(err)
	}
	if err := <-rDone; err != nil {
		t.Fatalf("rueidis WaitRelease after a goredis Release = %v; want nil", err)
	}
}
