package lock_test

// Black-box review of semaphores, read-write locks and hooks.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// rvSemSetups runs test over a native semaphore (single memory store), a
// plain-lock one over a store without Permitter, and one over a Redlock.
func rvSemSetups(t *testing.T, test func(t *testing.T, base lock.Locker, ms []*memory.Store)) {
	t.Run("native", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := memory.New()
			test(t, mustSingle(t, m, nil), []*memory.Store{m})
		})
	})
	t.Run("plain", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := memory.New()
			test(t, mustSingle(t, withoutStart{m, m, m, m, m}, nil), []*memory.Store{m})
		})
	})
	t.Run("multi", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ms, ls := memStores(3)
			test(t, mustMulti(t, ls, nil), ms)
		})
	})
}

func TestContractSemaphore(t *testing.T) {
	rvSemSetups(t, func(t *testing.T, base lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		s, err := lock.NewSemaphore(base, 2)
		wantNil(t, "NewSemaphore", err)
		if s.Limit() != 2 {
			t.Errorf("Limit() = %d", s.Limit())
		}
		a, err := s.TryLock(ctx, "pool", time.Minute)
		wantNil(t, "TryLock 1", err)
		b, err := s.TryLock(ctx, "pool", time.Minute)
		wantNil(t, "TryLock 2", err)
		if a.Resource != "pool" || b.Resource != "pool" || a.Token == b.Token {
			t.Errorf("permits %+v %+v; want resource pool, distinct tokens", a, b)
		}
		_, err = s.TryLock(ctx, "pool", time.Minute)
		wantIs(t, "TryLock 3 of 2", err, lock.ErrNotAcquired)
		if n, err := s.Permits(ctx, "pool"); n != 2 || err != nil {
			t.Errorf("Permits = %d, %v; want 2", n, err)
		}
		if ok, err := s.IsLocked(ctx, "pool"); !ok || err != nil {
			t.Errorf("IsLocked = %v, %v; want true", ok, err)
		}
		// Another limit is refused.
		s3, err := lock.NewSemaphore(base, 3)
		wantNil(t, "NewSemaphore(3)", err)
		_, err = s3.TryLock(ctx, "pool", time.Minute)
		wantIs(t, "TryLock with another limit", err, lock.ErrLimitMismatch)
		wantIs(t, "TryLock with another limit", err, lock.ErrInvalid)
		_, err = s3.Lock(ctx, "pool", time.Minute)
		wantIs(t, "Lock with another limit (must not wait)", err, lock.ErrLimitMismatch)

		// A waiter gets the permit released.
		got := make(chan error, 1)
		go func() { _, err := s.Lock(ctx, "pool", time.Minute); got <- err }()
		synctest.Wait()
		select {
		case err := <-got:
			t.Fatalf("Lock with no free permit returned %v", err)
		default:
		}
		wantNil(t, "Unlock(a)", s.Unlock(ctx, a))
		wantNil(t, "waiting Lock after a release", <-got)
		wantIs(t, "Unlock(a) twice", s.Unlock(ctx, a), lock.ErrNotHeld)

		// Extend.
		b2, err := s.Extend(ctx, b, 2*time.Minute)
		wantNil(t, "Extend(b)", err)
		if !b2.ValidUntil.After(b.ValidUntil) {
			t.Errorf("Extend did not move ValidUntil")
		}
		// Another semaphore over the same stores and limit releases it.
		other, err := lock.NewSemaphore(base, 2)
		wantNil(t, "NewSemaphore(other)", err)
		wantNil(t, "other's Unlock(b)", other.Unlock(ctx, b2))
		// Shutdown releases the rest and leaves the base locker in service.
		wantNil(t, "Shutdown", s.Shutdown(ctx))
		if n, err := s3.Permits(ctx, "pool"); n != 0 || err != nil {
			t.Errorf("Permits after Shutdown = %d, %v; want 0", n, err)
		}
		_, err = s.TryLock(ctx, "pool", time.Minute)
		wantIs(t, "TryLock after Shutdown", err, lock.ErrClosed)
		k, err := base.TryLock(ctx, "x", time.Minute)
		wantNil(t, "base TryLock after the semaphore's Shutdown", err)
		wantNil(t, "base Unlock", base.Unlock(ctx, k))
		time.Sleep(2 * time.Minute) // the limit marker, if any, expires
		noResidue(t, ms...)
	})
}

func TestContractSemaphoreRun(t *testing.T) {
	rvSemSetups(t, func(t *testing.T, base lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		s, err := lock.NewSemaphore(base, 3)
		wantNil(t, "NewSemaphore", err)
		var inside, most atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := lock.Run(ctx, s, "pool", 3*time.Second, func(ctx context.Context, _ lock.Lock) error {
					n := inside.Add(1)
					for {
						m := most.Load()
						if n <= m || most.CompareAndSwap(m, n) {
							break
						}
					}
					time.Sleep(10 * time.Second)
					inside.Add(-1)
					return ctx.Err()
				})
				if err != nil {
					t.Errorf("Run = %v", err)
				}
			}()
		}
		wg.Wait()
		if most.Load() != 3 {
			t.Errorf("at most %d inside; want exactly 3", most.Load())
		}
		time.Sleep(time.Minute)
		noResidue(t, ms...)
	})
}

func TestContractRWLocker(t *testing.T) {
	rvSemSetups(t, func(t *testing.T, base lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		rw, err := lock.NewRWLocker(base)
		wantNil(t, "NewRWLocker", err)
		r, w := rw.Reader(), rw.Writer()
		r1, err := r.TryLock(ctx, "doc", time.Minute)
		wantNil(t, "reader 1", err)
		r2, err := r.TryLock(ctx, "doc", time.Minute)
		wantNil(t, "reader 2", err)
		_, err = w.TryLock(ctx, "doc", time.Minute)
		wantIs(t, "writer TryLock while read", err, lock.ErrNotAcquired)
		if ok, err := r.IsLocked(ctx, "doc"); !ok || err != nil {
			t.Errorf("Reader().IsLocked = %v, %v; want true", ok, err)
		}
		if ok, err := w.IsLocked(ctx, "doc"); ok || err != nil {
			t.Errorf("Writer().IsLocked with readers only = %v, %v; want false", ok, err)
		}
		wc := make(chan lock.Lock, 1)
		go func() {
			l, err := w.Lock(ctx, "doc", time.Minute)
			if err != nil {
				t.Errorf("writer Lock = %v", err)
			}
			wc <- l
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		if ok, _ := w.IsLocked(ctx, "doc"); !ok {
			t.Errorf("Writer().IsLocked while a writer waits = false; want true")
		}
		_, err = r.TryLock(ctx, "doc", time.Minute)
		wantIs(t, "new reader while a writer waits", err, lock.ErrNotAcquired)
		wantNil(t, "Unlock(r1)", r.Unlock(ctx, r1))
		select {
		case <-wc:
			t.Fatalf("writer in while a reader holds")
		default:
		}
		wantNil(t, "Unlock(r2)", r.Unlock(ctx, r2))
		wl := <-wc
		_, err = r.TryLock(ctx, "doc", time.Minute)
		wantIs(t, "reader while written", err, lock.ErrNotAcquired)
		_, err = w.TryLock(ctx, "doc", time.Minute)
		wantIs(t, "second writer", err, lock.ErrNotAcquired)
		wl2, err := w.Extend(ctx, wl, time.Minute)
		wantNil(t, "writer Extend", err)
		wantNil(t, "writer Unlock", w.Unlock(ctx, wl2))
		r3, err := r.TryLock(ctx, "doc", time.Minute)
		wantNil(t, "reader after the writer", err)
		wantNil(t, "Unlock(r3)", r.Unlock(ctx, r3))
		wantNil(t, "Reader Shutdown", r.Shutdown(ctx))
		wantNil(t, "Writer Shutdown", w.Shutdown(ctx))
		time.Sleep(2 * time.Minute)
		noResidue(t, ms...)
	})
}

// rvSpanHook records Begin calls and checks the events carry its context.
type rvSpanHook struct {
	rvRecorder
	mu2    sync.Mutex
	begins []string
	bad    []string
}

type rvSpanKey struct{}

func (h *rvSpanHook) Begin(ctx context.Context, op, resource string) context.Context {
	h.mu2.Lock()
	h.begins = append(h.begins, op)
	h.mu2.Unlock()
	return context.WithValue(ctx, rvSpanKey{}, op)
}

func (h *rvSpanHook) Observe(ctx context.Context, e lock.Event) {
	h.rvRecorder.Observe(ctx, e)
	switch e.Kind {
	case lock.EventAcquired, lock.EventNotAcquired, lock.EventReleased, lock.EventExtended:
		if ctx.Value(rvSpanKey{}) == nil {
			h.mu2.Lock()
			h.bad = append(h.bad, e.Kind.String()+" of "+e.Op)
			h.mu2.Unlock()
		}
	}
}

func TestContractHookEvents(t *testing.T) {
	h := &rvSpanHook{}
	rvLockers(t, &lock.Options{Hook: h}, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		h.mu.Lock()
		h.ev = nil
		h.mu.Unlock()
		h.begins, h.bad = nil, nil
		k, err := l.TryLock(ctx, "r", time.Minute)
		wantNil(t, "TryLock", err)
		k, err = l.Extend(ctx, k, time.Minute)
		wantNil(t, "Extend", err)
		_, err = l.Lock(ctx, "r", time.Second, lock.WithRetry(lock.Retry{Attempts: 2, Delay: time.Millisecond}))
		wantIs(t, "Lock(held)", err, lock.ErrNotAcquired)
		wantNil(t, "Unlock", l.Unlock(ctx, k))
		ks := h.kinds()
		if len(ks) < 3 || ks[0] != lock.EventAttempt {
			t.Errorf("events %v; want an attempt first", ks)
		}
		for _, want := range []lock.EventKind{lock.EventAttempt, lock.EventStoreCall, lock.EventAcquired, lock.EventExtended, lock.EventRetry, lock.EventNotAcquired, lock.EventReleased} {
			if h.count(want) == 0 {
				t.Errorf("no %v event in %v", want, ks)
			}
		}
		if len(ms) > 1 && h.count(lock.EventQuorum) == 0 {
			t.Errorf("no quorum event on a MultiLocker")
		}
		if n := h.count(lock.EventAttempt); n != 3 {
			t.Errorf("%d attempts; want 3 (1 TryLock + 2 Lock)", n)
		}
		if got := len(h.begins); got != 4 {
			t.Errorf("SpanHook.Begin called for %v; want trylock, extend, lock, unlock", h.begins)
		}
		if len(h.bad) > 0 {
			t.Errorf("final events without Begin's context: %v", h.bad)
		}
		for _, e := range h.ev {
			if e.Kind == lock.EventStoreCall && (e.Store == "" || e.StoreOp == "") {
				t.Errorf("store call event without Store/StoreOp: %+v", e)
			}
		}
	})
}

func TestContractHookRunLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &rvRecorder{}
		m := memory.New()
		l := mustSingle(t, m, &lock.Options{Hook: rec})
		err := lock.Run(context.Background(), l, "r", 3*time.Second, func(ctx context.Context, _ lock.Lock) error {
			m.Expire("r")
			<-ctx.Done()
			return nil
		})
		wantIs(t, "Run", err, lock.ErrLost)
		if rec.count(lock.EventLost) != 1 {
			t.Errorf("%d EventLost; want 1", rec.count(lock.EventLost))
		}
	})
}

func TestContractMutualExclusionStress(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		var inside atomic.Int32
		var wg sync.WaitGroup
		var count int
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					k, err := l.Lock(ctx, "r", time.Second)
					if err != nil {
						t.Errorf("Lock = %v", err)
						return
					}
					if inside.Add(1) != 1 {
						t.Errorf("two holders at once")
					}
					count++
					time.Sleep(time.Millisecond)
					inside.Add(-1)
					if err := l.Unlock(ctx, k); err != nil {
						t.Errorf("Unlock = %v", err)
					}
				}
			}()
		}
		wg.Wait()
		if count != 16*20 {
			t.Errorf("count = %d; want %d", count, 16*20)
		}
		noResidue(t, ms...)
	})
	_ = errors.New
}

// rvNoTilde is a counting memory store that cannot hold names with '~'.
type rvNoTilde struct{ *counting }

func (rvNoTilde) ValidateResource(r string) error {
	if strings.Contains(r, "~") {
		return fmt.Errorf("%w: name %q has a '~'", lock.ErrInvalid, r)
	}
	return nil
}

// TestContractDerivedNamesValidated: "The derived names ... must be valid
// names of the store (they are checked before anything is sent)".
func TestContractDerivedNamesValidated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := rvNoTilde{newCounting("c")}
		// Hide the Permitter so that the semaphore is made of plain locks.
		base := mustSingle(t, struct {
			lock.Store
			lock.Extender
			lock.ResourceValidator
		}{c, c, c}, nil)
		sem, err := lock.NewSemaphore(base, 2)
		wantNil(t, "NewSemaphore", err)
		rw, err := lock.NewRWLocker(base)
		wantNil(t, "NewRWLocker", err)
		for name, l := range map[string]lock.Locker{"semaphore": sem, "reader": rw.Reader(), "writer": rw.Writer()} {
			_, err := l.TryLock(ctx, "r", time.Minute)
			wantIs(t, name+" TryLock with derived names the store refuses", err, lock.ErrInvalid)
			_, err = l.Lock(ctx, "r", time.Minute)
			wantIs(t, name+" Lock with derived names the store refuses", err, lock.ErrInvalid)
		}
		if n := c.calls.Load(); n != 0 {
			t.Errorf("%d store calls; want none before the names are checked", n)
		}
	})
}

// TestContractRWWriterGivesUpCleanly: a writer whose context ends while it
// waits for readers reports the context's error and leaves no intent
// behind (new readers get in again).
func TestContractRWWriterGivesUpCleanly(t *testing.T) {
	rvSemSetups(t, func(t *testing.T, base lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		rw, err := lock.NewRWLocker(base)
		wantNil(t, "NewRWLocker", err)
		r, w := rw.Reader(), rw.Writer()
		rk, err := r.TryLock(ctx, "doc", time.Minute)
		wantNil(t, "reader", err)
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = w.Lock(dctx, "doc", time.Minute)
		cancel()
		wantIs(t, "writer Lock until its deadline", err, context.DeadlineExceeded)
		if errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("writer Lock = %v; must not match ErrNotAcquired", err)
		}
		if ok, _ := w.IsLocked(ctx, "doc"); ok {
			t.Errorf("the writer's intent outlived its Lock call")
		}
		rk2, err := r.TryLock(ctx, "doc", time.Minute)
		wantNil(t, "a new reader after the writer gave up", err)
		wantNil(t, "Unlock", r.Unlock(ctx, rk))
		wantNil(t, "Unlock", r.Unlock(ctx, rk2))
		time.Sleep(2 * time.Minute)
		noResidue(t, ms...)
	})
}

// TestContractSemaphoreWaitCanceled: a semaphore waiter whose context ends
// reports the context's error, takes nothing, and leaves no goroutine
// behind (synctest fails on a leaked, blocked goroutine).
func TestContractSemaphoreWaitCanceled(t *testing.T) {
	rvSemSetups(t, func(t *testing.T, base lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		s, err := lock.NewSemaphore(base, 1)
		wantNil(t, "NewSemaphore", err)
		k, err := s.TryLock(ctx, "pool", time.Minute)
		wantNil(t, "TryLock", err)
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = s.Lock(dctx, "pool", time.Minute)
		cancel()
		wantIs(t, "Lock until deadline", err, context.DeadlineExceeded)
		if n, _ := s.Permits(ctx, "pool"); n != 1 {
			t.Errorf("Permits = %d; want 1", n)
		}
		wantNil(t, "Unlock", s.Unlock(ctx, k))
		time.Sleep(2 * time.Minute)
		noResidue(t, ms...)
	})
}
