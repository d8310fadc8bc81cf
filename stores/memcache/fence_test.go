package memcache_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// Fenced locks on many fresh names leave one item behind: the counter,
// holding the last fence. Nothing per resource remains.
func TestFenceCounterIsTheOnlyState(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t), memcache.WithPrefix("p:"), memcache.WithFenceGuard(0))
	var last uint64
	for i := range 50 {
		r := fmt.Sprint("invoice/", i)
		fence, err := s.AcquireFenced(ctx(t), r, "a", time.Minute)
		if err != nil || fence <= last {
			t.Fatalf("AcquireFenced(%s) = %d, %v; want a fence > %d", r, fence, err, last)
		}
		last = fence
		if err := s.Release(ctx(t), r, "a"); err != nil {
			t.Fatalf("Release(%s) = %v", r, err)
		}
		if it, found := item(t, srv, "p:"+r); found {
			t.Fatalf("the key of %s is still there after Release: %+v", r, it)
		}
	}
	it, found := item(t, srv, "p:#fence")
	if !found || it.Value != strconv.FormatUint(last, 10) || it.TTL != -1 {
		t.Fatalf("fence counter = %+v, found %v; want the last fence %d, never expiring", it, found, last)
	}
}

// A lost counter (evicted, or the server restarted) is created again
// from the clock after the guard, and fences go on increasing; with
// WithServer too, where the acquisition that finds it lost draws its fence
// through the client, and the next ones with their adds again.
func TestFenceCounterLost(t *testing.T) {
	t.Parallel()
	const guard = 50 * time.Millisecond
	eachWay(t, func(t *testing.T, withServer bool) {
		srv := memcachetest.Start(t, nil)
		client := srv.Client(t)
		s, incrs := fenceStore(t, srv, client, withServer, memcache.WithFenceGuard(guard))
		first, err := s.AcquireFenced(ctx(t), "r", "a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx(t), "r", "a"); err != nil {
			t.Fatal(err)
		}
		if err := client.Delete("p:#fence"); err != nil {
			t.Fatalf("deleting the counter = %v", err)
		}
		before := incrs.Load()
		start := time.Now()
		second, err := s.AcquireFenced(ctx(t), "r", "b", time.Minute)
		if err != nil || second <= first {
			t.Fatalf("AcquireFenced(r, b) after the counter was lost = %d, %v; want a fence > %d", second, err, first)
		}
		if waited := time.Since(start); waited < guard {
			t.Errorf("AcquireFenced(r, b) re-created the lost counter after %v; want it to wait the guard (%v) first", waited, guard)
		}
		if !withServer {
			return
		}
		if n := incrs.Load() - before; n != 1 {
			t.Errorf("%d incrs through the client for the acquisition that found the counter lost; want 1", n)
		}
		if err := s.Release(ctx(t), "r", "b"); err != nil {
			t.Fatal(err)
		}
		before = incrs.Load()
		if third, err := s.AcquireFenced(ctx(t), "r", "c", time.Minute); err != nil || third <= second {
			t.Fatalf("AcquireFenced(r, c) = %d, %v; want a fence > %d", third, err, second)
		}
		if n := incrs.Load() - before; n != 0 {
			t.Errorf("%d incrs through the client once the counter was back; want 0", n)
		}
	})
}

// A lock that cannot be given a fence is not left held.
func TestFenceFailureReleasesLock(t *testing.T) {
	t.Parallel()
	eachWay(t, func(t *testing.T, withServer bool) {
		srv := memcachetest.Start(t, nil)
		client := srv.Client(t)
		s, _ := fenceStore(t, srv, client, withServer)
		if err := client.Set(&gomemcache.Item{Key: "p:#fence", Value: []byte("not a number")}); err != nil {
			t.Fatal(err)
		}
		fence, err := s.AcquireFenced(ctx(t), "r", "a", time.Minute)
		wantFailedFree(t, s, "AcquireFenced(r, a) with a counter memcached cannot increment", "r", fence, err)
	})
}

// One counter serves every resource of a prefix: raising the fences of
// one raises all, and RaiseFence on a lost counter creates it above the
// fence asked for. Stores with other prefixes are not touched.
func TestRaiseFenceSharedCounter(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	client := srv.Client(t)
	s := newStore(t, client, memcache.WithPrefix("p:"), memcache.WithFenceGuard(0))
	other := newStore(t, client, memcache.WithPrefix("q:"), memcache.WithFenceGuard(0))
	f, err := s.AcquireFenced(ctx(t), "r1", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	floor := f + 1_000_000
	if err := s.RaiseFence(ctx(t), "r1", floor); err != nil {
		t.Fatalf("RaiseFence(r1, %d) = %v", floor, err)
	}
	if got, err := s.AcquireFenced(ctx(t), "r2", "a", time.Minute); err != nil || got <= floor {
		t.Fatalf("AcquireFenced(r2) after RaiseFence(r1, %d) = %d, %v; want a fence > %d", floor, got, err, floor)
	}
	if err := client.Delete("p:#fence"); err != nil {
		t.Fatal(err)
	}
	huge := uint64(1) << 62 // far ahead of the clock's microseconds
	if err := s.RaiseFence(ctx(t), "r3", huge); err != nil {
		t.Fatalf("RaiseFence(r3, 2^62) on a lost counter = %v", err)
	}
	if got, err := s.AcquireFenced(ctx(t), "r3", "a", time.Minute); err != nil || got <= huge {
		t.Fatalf("AcquireFenced(r3) after RaiseFence(r3, 2^62) = %d, %v; want a fence > 2^62", got, err)
	}
	if got, err := other.AcquireFenced(ctx(t), "r3", "a", time.Minute); err != nil || got >= huge {
		t.Fatalf("AcquireFenced(r3) on a store with another prefix = %d, %v; want a fence of its own counter, below 2^62", got, err)
	}
}

// An AcquireFenced whose caller gave up while the add was on its way, and
// whose fence then cannot be drawn, still gives the lock back — and a
// Release of its token, which waits for that add, returns. (The cleanup
// once waited for the add it was part of, and hung forever.)
func TestAbandonedFenceFailureReleasesLock(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	direct := srv.Client(t)
	if err := direct.Set(&gomemcache.Item{Key: "p:#fence", Value: []byte("not a number")}); err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	client := gomemcache.New(proxy.Addr())
	client.Timeout = time.Minute // the held reply must not time out
	s := newStore(t, client, memcache.WithPrefix("p:"))

	proxy.Set(faultproxy.ToClient, faultproxy.Hold())
	acquireCtx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	go func() { // give up once the add has reached memcached
		for {
			if _, found, _ := srv.Get("p:r"); found || acquireCtx.Err() != nil {
				cancel()
				return
			}
			runtime.Gosched()
		}
	}()
	if _, err := s.AcquireFenced(acquireCtx, "r", "a", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("AcquireFenced with its reply held, abandoned = %v; want context.Canceled", err)
	}
	proxy.Set(faultproxy.ToClient, faultproxy.Pass())

	releaseCtx, stop := context.WithTimeout(ctx(t), 30*time.Second)
	defer stop()
	if err := s.Release(releaseCtx, "r", "a"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release(r, a) after the abandoned AcquireFenced failed to draw a fence = %v; want ErrNotHeld: its cleanup released it", err)
	}
	if _, found := item(t, srv, "p:r"); found {
		t.Error("the lock's item is still in memcached")
	}
}

// RaiseFence after memcached restarted sends its read of the counter (an
// incr by 0) again when it fails on an idle connection to the old
// process, and creates the counter the restart lost above the fence.
func TestRaiseFenceAfterRestart(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t), memcache.WithPrefix("p:"), memcache.WithFenceGuard(0))
	first, err := s.AcquireFenced(ctx(t), "r", "a", time.Minute)
	if err != nil {
		t.Fatalf("AcquireFenced(r) = %v", err)
	}
	idleConnections(t, s, 8)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := s.RaiseFence(ctx(t), "r", first+1000); err != nil {
		t.Fatalf("RaiseFence(r, %d) after a restart = %v; want nil", first+1000, err)
	}
	if next, err := s.AcquireFenced(ctx(t), "r", "b", time.Minute); err != nil || next <= first+1000 {
		t.Fatalf("AcquireFenced(r, b) after RaiseFence(r, %d) = %d, %v; want a fence above it", first+1000, next, err)
	}
}
