package memcache_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// A MultiLocker over three memcached servers, one Store each: workers
// contend for one resource, and one server fails a third of the way in —
// killed, or paused for the next 20 critical sections. Mutual exclusion holds
// throughout (no two workers inside at once, no lost update), and every
// worker gets its turns, as two servers of three are still a majority.
func TestMultiLockerThreeServers(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"none", "kill", "pause"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			servers := memcachetest.StartN(t, 3, nil)
			stores := make([]lock.Store, len(servers))
			for i, srv := range servers {
				stores[i] = newStore(t, srv.Client(t), memcache.WithName(fmt.Sprintf("memcached-%d", i)))
			}
			// A generous store timeout, so that a slow answer on a busy
			// machine is not taken for a failure; with a server paused, a
			// short one, or every unlock would wait a second for it.
			timeout := time.Second
			if fault == "pause" {
				timeout = 100 * time.Millisecond
			}
			locker, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: timeout}) // majority
			if err != nil {
				t.Fatal(err)
			}
			victim := servers[1]
			w := contend(t, locker, func(done, total int64) {
				switch {
				case fault == "kill" && done == total/3:
					victim.Kill()
				case fault == "pause" && done == total/3:
					if err := victim.Pause(); err != nil {
						t.Error(err)
					}
				case fault == "pause" && done == total/3+20:
					if err := victim.Resume(); err != nil {
						t.Error(err)
					}
				}
			})
			t.Logf("fault %q: %d critical sections, %d overlaps, %d unlocks reporting a failed store (first: %v)", fault, w.done, w.overlaps, w.unavailable, w.firstUnavailable)
			if w.overlaps != 0 {
				t.Errorf("workers were inside the critical section together %d times; want 0", w.overlaps)
			}
			if fault == "none" && w.unavailable != 0 {
				t.Errorf("%d unlocks reported a failed store with every server up; want 0", w.unavailable)
			}
			// The servers that never failed hold nothing once all is unlocked.
			for _, i := range []int{0, 2} {
				if held, err := stores[i].Exists(ctx(t), "r"); err != nil || held {
					t.Errorf("memcached-%d: Exists(r) after every Unlock = %v, %v; want false, nil", i, held, err)
				}
			}
		})
	}
}

type workload struct {
	done, overlaps, unavailable int64
	firstUnavailable            error
}

// contend runs workers that each take the lock on "r" through locker a
// number of times, and calls progress (from the worker inside the
// critical section) after each critical section with the count so far.
func contend(t *testing.T, locker lock.Locker, progress func(done, total int64)) workload {
	const workers, perWorker = 6, 40
	total := int64(workers * perWorker)
	var inside, overlaps, done, unavailable atomic.Int64
	var counter int64 // guarded by the lock alone
	var firstUnavailable atomic.Pointer[error]
	retry := lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 2 * time.Millisecond, MaxDelay: 20 * time.Millisecond})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				held, err := locker.Lock(ctx(t), "r", 5*time.Second, retry)
				if err != nil {
					t.Errorf("worker %d: Lock(r) = %v", w, err)
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				if !held.Valid() {
					t.Errorf("worker %d: Lock(r) returned a lock past its validity", w)
				}
				c := counter
				runtime.Gosched()
				counter = c + 1
				progress(done.Add(1), total)
				inside.Add(-1)
				switch err := locker.Unlock(ctx(t), held); {
				case err == nil:
				case errors.Is(err, lock.ErrUnavailable) && !errors.Is(err, lock.ErrNotHeld):
					unavailable.Add(1) // a store failed; the majority released
					firstUnavailable.CompareAndSwap(nil, &err)
				default:
					t.Errorf("worker %d: Unlock(r) = %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if counter != total {
		t.Errorf("counter = %d after %d locked increments: updates were lost", counter, total)
	}
	w := workload{done: done.Load(), overlaps: overlaps.Load(), unavailable: unavailable.Load()}
	if p := firstUnavailable.Load(); p != nil {
		w.firstUnavailable = *p
	}
	return w
}

// The package doc: the first fenced acquisition on a server whose fence
// counter is missing waits the fence guard, so a MultiLocker over new
// servers needs a StoreTimeout above it; given one, its first TryLock
// holds the lock, fenced, on every server. (With the default 50ms, it
// reports every store failed.)
func TestMultiLockerFirstTryLockOnNewServers(t *testing.T) {
	t.Parallel()
	servers := memcachetest.StartN(t, 3, nil)
	stores := make([]lock.Store, len(servers))
	for i, srv := range servers {
		stores[i] = newStore(t, srv.Client(t), memcache.WithName(fmt.Sprintf("memcached-%d", i)))
	}
	// Above the fence guard (100ms) and a round trip, generously: a busy
	// machine must not fail the test.
	locker, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	l, err := locker.TryLock(ctx, "r", 10*time.Second)
	if err != nil {
		t.Fatalf("TryLock(r) over three new servers = %v; want the lock", err)
	}
	if l.Fence == 0 {
		t.Errorf("TryLock(r) over three new servers: fence 0; want a fenced lock")
	}
	if err := locker.Unlock(ctx, l); err != nil {
		t.Errorf("Unlock(r) = %v; want nil", err)
	}
}
