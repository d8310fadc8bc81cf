package conformance

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// The rules of the lockers of package lock built on the store.

func singleLocker(t *testing.T, h *harness) {
	h.checkWaitBlocks()
	l, err := lock.NewSingle(h.store, nil)
	if err != nil {
		t.Fatalf("lock.NewSingle(store, nil) = %v; want nil", err)
	}
	lockerContention(t, h, l, []lock.Store{h.store})
}

func multiLocker(t *testing.T, h *harness) {
	h.checkWaitBlocks()
	stores := []lock.Store{h.store, h.newStore(t), h.newStore(t)}
	l, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: time.Second})
	if err != nil {
		t.Fatalf("lock.NewMulti(3 stores, {StoreTimeout: 1s}) = %v; want nil", err)
	}
	lockerContention(t, h, l, stores)
}

// lockerContention has workers take turns on one resource through l,
// checking that no two are ever inside at once and no update is lost.
func lockerContention(t *testing.T, h *harness, l lock.Locker, stores []lock.Store) {
	const perWorker = 5
	workers := min(h.opts.Contenders, 4)
	r := h.res("r")
	ttl := 5*time.Second + 2*h.gran
	var inside, overlaps atomic.Int32
	var counter atomic.Int64 // read and written non-atomically below: the lock must protect it
	var wg sync.WaitGroup
	ctx := h.ctx()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				held, err := l.Lock(ctx, r, ttl, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond}))
				if err != nil {
					t.Errorf("worker %d: Lock(r) = %v; want nil", w, err)
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				if !held.Valid() {
					t.Errorf("worker %d: Lock(r) returned a lock already past its validity (%v)", w, held.ValidUntil)
				}
				c := counter.Load()
				time.Sleep(time.Millisecond)
				counter.Store(c + 1)
				inside.Add(-1)
				if err := l.Unlock(ctx, held); err != nil {
					t.Errorf("worker %d: Unlock(r) = %v; want nil", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := overlaps.Load(); n > 0 {
		t.Errorf("a worker entered the critical section while another was inside %d times; want 0", n)
	}
	if got, want := counter.Load(), int64(workers*perWorker); got != want {
		t.Errorf("counter = %d after %d locked increments; want %d: updates were lost", got, want, want)
	}
	if err := l.Shutdown(h.ctx()); err != nil {
		t.Errorf("Shutdown() = %v; want nil", err)
	}
	// A locker releases in the background what a store granted after an
	// attempt had failed, or failed to release at once, a store timeout
	// later at the most: wait that long (and far less than the TTL, which
	// would free the resource by itself).
	deadline := time.Now().Add(releaseGrace)
	for i, s := range stores {
		for {
			ok, err := s.Exists(h.ctx(), r)
			if err == nil && !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("store %d: Exists(r) %v after every Unlock and Shutdown = %v, %v; want false, nil", i, releaseGrace, ok, err)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// releaseGrace bounds the wait for a locker's background releases: the
// lockers' store timeout in these rules (1s), twice over.
const releaseGrace = 2 * time.Second
