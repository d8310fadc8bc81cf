package memcache_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// holdFirstIncr makes the first incr of s wait until want acquisitions
// have queued behind it, so that the next incr serves a batch of them, and
// then calls more, if not nil, before every incr.
func holdFirstIncr(t *testing.T, s *memcache.Store, want int, more func(n int)) {
	var first atomic.Bool
	wait := ctx(t)
	memcache.SetBeforeFenceIncr(s, func(n int) {
		if first.CompareAndSwap(false, true) {
			for memcache.QueuedFences(s) < want {
				if wait.Err() != nil {
					t.Errorf("%d acquisitions queued behind the first incr after a minute; want %d", memcache.QueuedFences(s), want)
					break
				}
				runtime.Gosched()
			}
		}
		if more != nil {
			more(n)
		}
	})
}

// Fenced acquisitions that share incrs get distinct fences across
// resources, and successive holders of one resource increasing ones.
func TestFenceBatchesDistinctAndIncreasing(t *testing.T) {
	t.Parallel()
	const (
		workers   = 32
		resources = 8
		rounds    = 20
	)
	srv := memcachetest.Start(t, nil)
	client := srv.Client(t)
	client.MaxIdleConns = workers
	s := newStore(t, client, memcache.WithPrefix("p:"), memcache.WithFenceGuard(0))
	var largest atomic.Int64
	holdFirstIncr(t, s, 2, func(n int) {
		for old := largest.Load(); int64(n) > old && !largest.CompareAndSwap(old, int64(n)); old = largest.Load() {
		}
	})

	var (
		mu   sync.Mutex
		seen = map[uint64]string{} // fence → resource and holder
		last [resources]uint64     // the last fence of each resource's holders
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			token := fmt.Sprint("w", w)
			for i := range rounds {
				r := fmt.Sprint("r", (w+i)%resources)
				fence, err := s.AcquireFenced(ctx(t), r, token, time.Minute)
				for errors.Is(err, lock.ErrNotAcquired) {
					runtime.Gosched()
					fence, err = s.AcquireFenced(ctx(t), r, token, time.Minute)
				}
				if err != nil {
					t.Errorf("AcquireFenced(%s, %s) = %v; want a fence", r, token, err)
					return
				}
				mu.Lock()
				if other, dup := seen[fence]; dup {
					t.Errorf("AcquireFenced(%s, %s) = %d, also the fence of %s; want distinct fences", r, token, fence, other)
				}
				seen[fence] = r + "/" + token
				if k := (w + i) % resources; fence <= last[k] {
					t.Errorf("AcquireFenced(%s, %s) = %d after the previous holder's %d; want a greater fence", r, token, fence, last[k])
				} else {
					last[k] = fence
				}
				mu.Unlock()
				if err := s.Release(ctx(t), r, token); err != nil {
					t.Errorf("Release(%s, %s) = %v; want nil", r, token, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := largest.Load(); n < 2 {
		t.Errorf("the largest incr served %d acquisitions; want a batch of 2 or more", n)
	}
}

// A batch whose incr finds the counter lost creates it again from the
// clock, once, and hands out fences above every fence before the loss.
func TestFenceBatchCounterLost(t *testing.T) {
	t.Parallel()
	const batch = 4
	srv := memcachetest.Start(t, nil)
	client := srv.Client(t)
	s := newStore(t, client, memcache.WithPrefix("p:"), memcache.WithFenceGuard(0))
	var before uint64
	for i := range 3 {
		r := fmt.Sprint("old", i)
		fence, err := s.AcquireFenced(ctx(t), r, "a", time.Minute)
		if err != nil {
			t.Fatalf("AcquireFenced(%s, a) = %v; want a fence", r, err)
		}
		before = max(before, fence)
		if err := s.Release(ctx(t), r, "a"); err != nil {
			t.Fatal(err)
		}
	}
	// The first incr serves one acquisition and waits for the others to
	// queue; the counter is deleted before the incr of their batch.
	var lost atomic.Int64 // batches that found the counter deleted
	holdFirstIncr(t, s, batch, func(n int) {
		if n > 1 && lost.Add(1) == 1 {
			if err := client.Delete("p:#fence"); err != nil {
				t.Errorf("deleting the counter = %v", err)
			}
		}
	})

	fences := make([]uint64, batch+1)
	var wg sync.WaitGroup
	for i := range fences {
		wg.Go(func() {
			r := fmt.Sprint("new", i)
			fence, err := s.AcquireFenced(ctx(t), r, "b", time.Minute)
			if err != nil {
				t.Errorf("AcquireFenced(%s, b) = %v; want a fence", r, err)
			}
			fences[i] = fence
		})
	}
	wg.Wait()
	if lost.Load() == 0 {
		t.Fatal("no incr served a batch of more than one acquisition; want one, which found the counter lost")
	}
	seen := map[uint64]bool{}
	for i, fence := range fences {
		if fence <= before || seen[fence] {
			t.Errorf("AcquireFenced(new%d, b) = %d; want a fence distinct from the others' and > %d, the largest before the loss", i, fence, before)
		}
		seen[fence] = true
	}
	it, found := item(t, srv, "p:#fence")
	if !found {
		t.Fatal("the fence counter is missing after the batch; want it created again")
	}
	if want := fmt.Sprint(slices.Max(fences)); it.Value != want {
		t.Errorf("fence counter = %s; want %s, the largest fence handed out", it.Value, want)
	}
}

// A batch whose incr fails fails every acquisition of the batch, as a
// lone incr's failure does, and each gives its lock back.
func TestFenceBatchFailureReleasesLocks(t *testing.T) {
	t.Parallel()
	const batch = 3
	srv := memcachetest.Start(t, nil)
	client := srv.Client(t)
	s := newStore(t, client, memcache.WithPrefix("p:"))
	if err := client.Set(&gomemcache.Item{Key: "p:#fence", Value: []byte("not a number")}); err != nil {
		t.Fatal(err)
	}
	var batches atomic.Int64 // incrs serving more than one acquisition
	holdFirstIncr(t, s, batch, func(n int) {
		if n > 1 {
			batches.Add(1)
		}
	})
	var wg sync.WaitGroup
	for i := range batch + 1 {
		wg.Go(func() {
			r := fmt.Sprint("r", i)
			if fence, err := s.AcquireFenced(ctx(t), r, "a", time.Minute); err == nil || errors.Is(err, lock.ErrNotAcquired) {
				t.Errorf("AcquireFenced(%s, a) with a counter memcached cannot increment = %d, %v; want an error other than ErrNotAcquired", r, fence, err)
			}
			if held, err := s.Exists(ctx(t), r); err != nil || held {
				t.Errorf("Exists(%s) after the failed AcquireFenced = %v, %v; want false: the lock must be released", r, held, err)
			}
		})
	}
	wg.Wait()
	if batches.Load() == 0 {
		t.Error("no incr served a batch of more than one acquisition; want one, which failed")
	}
}

// A client keeping gomemcache's default of two idle connections does not
// share incrs: acquisitions that draw fences at once each send their own
// (a batch going on together would make such a client dial all the more).
func TestFenceBatchOffWithFewIdleConns(t *testing.T) {
	t.Parallel()
	const others = 3
	srv := memcachetest.Start(t, nil)
	client := srv.Client(t)
	client.MaxIdleConns = gomemcache.DefaultMaxIdleConns
	s := newStore(t, client, memcache.WithPrefix("p:"))
	var (
		first   atomic.Bool
		inIncr  atomic.Int64 // other acquisitions in their own incr while the first waits
		largest atomic.Int64
	)
	wait := ctx(t)
	memcache.SetBeforeFenceIncr(s, func(n int) {
		largest.Store(max(largest.Load(), int64(n)))
		if !first.CompareAndSwap(false, true) {
			inIncr.Add(1)
			return
		}
		// Hold the first incr until the others are drawing too, in
		// their own incrs or queued behind this one.
		for inIncr.Load() < others && memcache.QueuedFences(s) < others && wait.Err() == nil {
			runtime.Gosched()
		}
	})
	var wg sync.WaitGroup
	for i := range others + 1 {
		wg.Go(func() {
			r := fmt.Sprint("r", i)
			if _, err := s.AcquireFenced(ctx(t), r, "a", time.Minute); err != nil {
				t.Errorf("AcquireFenced(%s, a) = %v; want a fence", r, err)
			}
		})
	}
	wg.Wait()
	if q := memcache.QueuedFences(s); q != 0 || largest.Load() != 1 || inIncr.Load() != others {
		t.Errorf("with %d idle connections: %d acquisitions queued, largest incr served %d, %d drew their own while the first waited; want none queued, every incr serving 1, %d drawing their own", client.MaxIdleConns, q, largest.Load(), inIncr.Load(), others)
	}
}
