package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// The rules of the semaphores and read-write locks of package lock built
// on the store: natively if it is a lock.Permitter, from plain locks
// otherwise.

var semaphoreRules = []rule{
	{name: "Semaphore", run: semaphore,
		why: "a lock.Semaphore over the store must never let more than its limit of workers in at once"},
	{name: "RWLocker", run: rwLocker,
		why: "a lock.RWLocker over the store must keep a writer alone, and let readers in together"},
	{name: "RWLockerWriterNotStarved", run: rwWriterNotStarved,
		why: "a writer waiting for readers to leave must keep new readers out, or a stream of readers starves it"},
}

// lockerRetry is the retry policy of the workers of the locker rules.
var lockerRetry = lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond})

func (h *harness) single() *lock.SingleLocker {
	h.t.Helper()
	l, err := lock.NewSingle(h.store, nil)
	if err != nil {
		h.t.Fatalf("lock.NewSingle(store, nil) = %v; want nil", err)
	}
	return l
}

// lockerTTL is the TTL of the locks of the locker rules: long enough that
// none expires while its holder works.
func (h *harness) lockerTTL() time.Duration { return 5*time.Second + 2*h.gran }

// most raises m to n if n is more.
func most(m *atomic.Int32, n int32) {
	for v := m.Load(); n > v && !m.CompareAndSwap(v, n); v = m.Load() {
	}
}

func semaphore(t *testing.T, h *harness) {
	const limit, perWorker = 2, 3
	workers := min(h.opts.Contenders, 5)
	r := h.res("r")
	ctx := h.ctx()
	var inside, peak atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		sem, err := lock.NewSemaphore(h.single(), limit)
		if err != nil {
			t.Fatalf("lock.NewSemaphore(locker, %d) = %v; want nil", limit, err)
		}
		wg.Go(func() {
			for range perWorker {
				held, err := sem.Lock(ctx, r, h.lockerTTL(), lockerRetry)
				if err != nil {
					t.Errorf("worker %d: Semaphore.Lock(r) = %v; want nil", w, err)
					return
				}
				most(&peak, inside.Add(1))
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
				if err := sem.Unlock(ctx, held); err != nil {
					t.Errorf("worker %d: Semaphore.Unlock(r) = %v; want nil", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > limit {
		t.Errorf("%d workers were inside at once through a semaphore of limit %d; want at most %d", p, limit, limit)
	}
	sem, _ := lock.NewSemaphore(h.single(), limit)
	if n, err := sem.Permits(h.ctx(), r); n != 0 || err != nil {
		t.Errorf("Semaphore.Permits(r) after every Unlock = %d, %v; want 0, nil", n, err)
	}
}

func (h *harness) rw() *lock.RWLocker {
	h.t.Helper()
	rw, err := lock.NewRWLocker(h.single())
	if err != nil {
		h.t.Fatalf("lock.NewRWLocker(locker) = %v; want nil", err)
	}
	return rw
}

func rwLocker(t *testing.T, h *harness) {
	const perWorker = 3
	workers := min(h.opts.Contenders, 5)
	r := h.res("r")
	ctx := h.ctx()
	var readers, writers atomic.Int32
	var bad atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		rw := h.rw()
		wg.Go(func() {
			for n := range perWorker {
				write := (w+n)%3 == 0
				side := rw.Reader()
				if write {
					side = rw.Writer()
				}
				held, err := side.Lock(ctx, r, h.lockerTTL(), lockerRetry)
				if err != nil {
					t.Errorf("worker %d: Lock(r, write=%v) = %v; want nil", w, write, err)
					return
				}
				if write {
					if writers.Add(1) > 1 || readers.Load() > 0 {
						bad.Add(1)
					}
				} else if readers.Add(1); writers.Load() > 0 {
					bad.Add(1)
				}
				time.Sleep(2 * time.Millisecond)
				if write {
					writers.Add(-1)
				} else {
					readers.Add(-1)
				}
				if err := side.Unlock(ctx, held); err != nil {
					t.Errorf("worker %d: Unlock(r, write=%v) = %v; want nil", w, write, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := bad.Load(); n > 0 {
		t.Errorf("a writer was inside with another writer or with readers %d times; want 0", n)
	}
	// Then in turn, on a resource of its own.
	rw, r := h.rw(), h.res("q")
	a, err := rw.Reader().TryLock(h.ctx(), r, h.lockerTTL())
	h.must("Reader().TryLock(r) with no one inside", err)
	b, err := rw.Reader().TryLock(h.ctx(), r, h.lockerTTL())
	h.must("Reader().TryLock(r) while another reader holds r", err)
	_, err = rw.Writer().TryLock(h.ctx(), r, h.lockerTTL())
	h.want("Writer().TryLock(r) while readers hold r", err, lock.ErrNotAcquired)
	h.must("Reader().Unlock(a)", rw.Reader().Unlock(h.ctx(), a))
	h.must("Reader().Unlock(b)", rw.Reader().Unlock(h.ctx(), b))
	wl, err := rw.Writer().TryLock(h.ctx(), r, h.lockerTTL())
	h.must("Writer().TryLock(r) once the readers left", err)
	_, err = rw.Reader().TryLock(h.ctx(), r, h.lockerTTL())
	h.want("Reader().TryLock(r) while a writer holds r", err, lock.ErrNotAcquired)
	h.must("Writer().Unlock(w)", rw.Writer().Unlock(h.ctx(), wl))
}

func rwWriterNotStarved(t *testing.T, h *harness) {
	r := h.res("r")
	rw := h.rw()
	first, err := rw.Reader().TryLock(h.ctx(), r, h.lockerTTL())
	h.must("Reader().TryLock(r)", err)
	wctx, cancel := context.WithCancel(h.ctx())
	defer cancel()
	got := make(chan error, 1)
	var wl lock.Lock
	go func() {
		var err error
		wl, err = rw.Writer().Lock(wctx, r, h.lockerTTL(), lockerRetry)
		got <- err
	}()
	// The writer announces itself before it waits: poll for its intent.
	// Readers look for it with the same store call as Writer().IsLocked
	// (Exists of the intent), so a store that hides it fails here: say
	// then what that does to new readers.
	began := time.Now()
	for {
		if time.Since(began) > waitLimit {
			if _, err := rw.Reader().TryLock(h.ctx(), r, h.lockerTTL()); err == nil {
				t.Fatalf("Reader().TryLock(r) = nil while Writer().Lock(r) has waited %v for a reader to leave, and Writer().IsLocked(r) = false; want ErrNotAcquired: new readers do not see the waiting writer, and a stream of them starves it", waitLimit)
			}
			t.Fatalf("Writer().IsLocked(r) = false %v after Writer().Lock(r) began, while a reader holds r; want true: the writer announces itself before it waits", waitLimit)
		}
		announced, err := rw.Writer().IsLocked(h.ctx(), r)
		h.must("Writer().IsLocked(r)", err)
		if announced {
			break
		}
		select {
		case err := <-got:
			t.Fatalf("Writer().Lock(r) while a reader holds r = %v; want it to wait", errString(err))
		default:
		}
		time.Sleep(time.Millisecond)
	}
	for i := range 3 {
		_, err := rw.Reader().TryLock(h.ctx(), r, h.lockerTTL())
		h.want(fmt.Sprintf("Reader().TryLock(r) #%d while a writer waits for the first reader to leave", i+1), err, lock.ErrNotAcquired)
	}
	h.must("Reader().Unlock(first)", rw.Reader().Unlock(h.ctx(), first))
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case err := <-got:
		h.must("Writer().Lock(r) once the reader left", err)
	case <-timer.C:
		t.Fatalf("Writer().Lock(r) still waiting %v after the last reader left; want it to get r", waitLimit)
	}
	h.must("Writer().Unlock(w)", rw.Writer().Unlock(h.ctx(), wl))
	if err := rw.Reader().Unlock(h.ctx(), first); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Reader().Unlock(first) a second time = %v; want ErrNotHeld", errString(err))
	}
}
