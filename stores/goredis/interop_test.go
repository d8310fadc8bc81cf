package goredis_test

import (
	"errors"
	"slices"
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

// TestInteropDefaults: stores made without options share locks (the
// default prefix is DefaultPrefix in both), under the documented keys,
// and every call of one store works on what the other took: Holder,
// LastFence, ForceRelease, permits, the restart guard's marker.
func TestInteropDefaults(t *testing.T) {
	srv := redistest.Start(t)
	g, err := goredis.New(clientOf(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	r, err := rueidisstore.New(srv.NewClient(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 30*time.Second)
	keys := func() []string {
		t.Helper()
		keys, err := srv.Do("KEYS", "*").AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		return keys
	}
	const res = "a}%b{c" // escaped: "}" as %7D, "%" as %25
	lockKey := goredis.DefaultPrefix + "{a%7D%25b{c}"

	fence, err := r.AcquireFenced(ctx, res, "secret~alice", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keys(), []string{lockKey, goredis.FenceKey}; !slices.Equal(got, want) {
		t.Errorf("keys while %q is locked = %q; want %q", res, got, want)
	}
	if who, held, err := g.Holder(ctx, res); err != nil || !held || who != "alice" {
		t.Errorf("goredis Holder of a rueidis lock = %q, %v, %v; want alice, true", who, held, err)
	}
	if last, ok, err := g.LastFence(ctx, res); err != nil || !ok || last != fence {
		t.Errorf("goredis LastFence after a rueidis AcquireFenced = %d, %v, %v; want %d, true", last, ok, err, fence)
	}
	if held, err := g.ForceRelease(ctx, res); err != nil || !held {
		t.Errorf("goredis ForceRelease of a rueidis lock = %v, %v; want true", held, err)
	}
	if held, err := g.ForceRelease(ctx, res); err != nil || held {
		t.Errorf("goredis ForceRelease of a released lock = %v, %v; want false", held, err)
	}
	if err := r.Release(ctx, res, "secret~alice"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("rueidis Release of a lock released by force = %v; want lock.ErrNotHeld", err)
	}

	if _, err := r.AcquirePermit(ctx, res, "p1", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, want := keys(), []string{lockKey + ":permits", goredis.FenceKey}; !slices.Equal(got, want) {
		t.Errorf("keys while a permit on %q is held = %q; want %q", res, got, want)
	}
	if _, err := g.AcquirePermit(ctx, res, "p2", 1, time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("goredis AcquirePermit(limit 1) with a rueidis permit held = %v; want lock.ErrNotAcquired", err)
	}
	if _, err := g.AcquirePermit(ctx, res, "p2", 2, time.Minute); !errors.Is(err, lock.ErrLimitMismatch) {
		t.Errorf("goredis AcquirePermit(limit 2) with a rueidis permit held under limit 1 = %v; want lock.ErrLimitMismatch", err)
	}
	if err := g.ExtendPermit(ctx, res, "p1", time.Minute); err != nil {
		t.Errorf("goredis ExtendPermit of a rueidis permit = %v; want nil", err)
	}
	if err := g.ReleasePermit(ctx, res, "p1"); err != nil {
		t.Errorf("goredis ReleasePermit of a rueidis permit = %v; want nil", err)
	}
	if got, want := keys(), []string{goredis.FenceKey}; !slices.Equal(got, want) {
		t.Errorf("keys once every lock and permit is released = %q; want %q", got, want)
	}

	// The restart guard's marker is one per server, whichever client set it.
	if err := srv.Do("FLUSHALL").Error(); err != nil {
		t.Fatal(err)
	}
	gg, err := goredis.New(clientOf(t, srv), goredis.WithRestartGuard(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	rg, err := rueidisstore.New(srv.NewClient(t), rueidisstore.WithRestartGuard(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := gg.Acquire(ctx, res, "t", time.Minute); !errors.Is(err, goredis.ErrRecovering) || !errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("guarded goredis Acquire on a flushed server = %v; want ErrRecovering, lock.ErrUnavailable", err)
	}
	if got, want := keys(), []string{goredis.GuardKey}; !slices.Equal(got, want) {
		t.Errorf("keys after a guarded refusal = %q; want %q", got, want)
	}
	if _, err := rg.AcquirePermit(ctx, res, "t", 2, time.Minute); !errors.Is(err, rueidisstore.ErrRecovering) {
		t.Errorf("guarded rueidis AcquirePermit on a server the goredis store found flushed = %v; want ErrRecovering", err)
	}
}
