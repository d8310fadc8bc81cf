package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
	"github.com/lockkit/lock/tokengen"
)

// lineStore is a memory store that queues acquisitions (lock.Queuer) the
// simple way: a queued acquisition waits for a release and acquires, as a
// store that keeps a line would hand it the lock. unsupported makes it
// report errors.ErrUnsupported instead.
type lineStore struct {
	*memory.Store
	unsupported bool
	calls       atomic.Int32 // AcquireQueued calls
}

func (s *lineStore) AcquireQueued(ctx context.Context, a lock.QueuedAcquisition) (uint64, error) {
	s.calls.Add(1)
	if s.unsupported {
		return 0, fmt.Errorf("no line here: %w", errors.ErrUnsupported)
	}
	wctx, cancel := context.WithTimeout(ctx, a.Wait)
	defer cancel()
	for {
		var fence uint64
		var err error
		if a.Fenced {
			fence, err = s.AcquireFenced(ctx, a.Resource, a.Token, a.TTL)
		} else {
			err = s.Acquire(ctx, a.Resource, a.Token, a.TTL)
		}
		if !errors.Is(err, lock.ErrNotAcquired) {
			return fence, err
		}
		if a.Queued != nil {
			a.Queued()
			a.Queued = nil
		}
		if err := s.WaitRelease(wctx, a.Resource); err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, lock.ErrNotAcquired
		}
	}
}

// storeOps is a hook that writes down the store calls of Lock.
type storeOps struct {
	mu  sync.Mutex
	ops []string
}

func (h *storeOps) Observe(_ context.Context, e lock.Event) {
	if e.Kind == lock.EventStoreCall && e.Op == "lock" {
		h.mu.Lock()
		h.ops = append(h.ops, e.StoreOp)
		h.mu.Unlock()
	}
}

func (h *storeOps) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ops...)
}

// A Lock handed the lock by its store's line after a wait that cost more
// than an eighth of the validity extends it, and its validity counts from
// the extension; after a shorter wait, it counts from the call.
func TestQueuedLongWaitRenewsValidity(t *testing.T) {
	const ttl = time.Second
	const validity = ttl - 12*time.Millisecond // less the default drift allowance
	for _, tc := range []struct {
		wait  time.Duration
		renew bool
	}{{100 * time.Millisecond, false}, {200 * time.Millisecond, true}} {
		t.Run(fmt.Sprint(tc.wait), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				s := &lineStore{Store: memory.New()}
				holder := mustSingle(t, s, nil)
				var ops storeOps
				l := mustSingle(t, s, &lock.Options{Hook: &ops})
				h, err := holder.Lock(ctx, "r", time.Minute)
				wantNil(t, "Lock() by the holder", err)
				began := time.Now()
				var got lock.Lock
				done := make(chan error)
				go func() {
					var err error
					got, err = l.Lock(ctx, "r", ttl)
					done <- err
				}()
				time.Sleep(tc.wait)
				wantNil(t, "Unlock() by the holder", holder.Unlock(ctx, h))
				wantNil(t, "Lock() handed over", <-done)
				if s.calls.Load() == 0 {
					t.Fatal("Lock did not queue (no AcquireQueued call)")
				}
				want := began.Add(validity)
				if tc.renew {
					want = time.Now().Add(validity)
				}
				if !got.ValidUntil.Equal(want) {
					t.Errorf("ValidUntil = %v after a wait of %v; want %v", got.ValidUntil.Sub(began), tc.wait, want.Sub(began))
				}
				extended := false
				for _, op := range ops.list() {
					extended = extended || op == "extend"
				}
				if extended != tc.renew {
					t.Errorf("after a wait of %v the store calls were %q; want an extension: %v", tc.wait, ops.list(), tc.renew)
				}
				if ttl, _, err := s.TTL(ctx, "r"); err != nil || ttl < time.Until(got.ValidUntil) {
					t.Errorf("the store keeps the lock %v (%v); want at least its validity, %v", ttl, err, time.Until(got.ValidUntil))
				}
			})
		})
	}
}

// A store that reports errors.ErrUnsupported for queued acquisitions is
// asked once: Lock makes the attempt as without the capability, waits
// with WaitRelease, and no later Lock queues.
func TestQueuedUnsupportedFallsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := &lineStore{Store: memory.New(), unsupported: true}
		holder := mustSingle(t, s, nil)
		l := mustSingle(t, s, nil)
		for i := range 2 {
			h, err := holder.TryLock(ctx, "r", time.Minute)
			wantNil(t, "TryLock() by the holder", err)
			done := make(chan error)
			go func() {
				got, err := l.Lock(ctx, "r", time.Minute)
				if err == nil {
					err = l.Unlock(ctx, got)
				}
				done <- err
			}()
			synctest.Wait()
			wantNil(t, "Unlock() by the holder", holder.Unlock(ctx, h))
			if err := <-done; err != nil {
				t.Fatalf("Lock() #%d through a store that cannot queue = %v; want the lock once released", i+1, err)
			}
		}
		if n := s.calls.Load(); n != 1 {
			t.Errorf("AcquireQueued called %d times; want once, then never again", n)
		}
	})
}

// Shutdown ends a Lock waiting in its store's line with ErrClosed, and
// nothing stays locked.
func TestQueuedShutdownEndsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := &lineStore{Store: memory.New()}
		holder := mustSingle(t, s, nil)
		l := mustSingle(t, s, nil)
		h, err := holder.Lock(ctx, "r", time.Minute)
		wantNil(t, "Lock() by the holder", err)
		done := make(chan error)
		go func() {
			_, err := l.Lock(ctx, "r", time.Minute)
			done <- err
		}()
		synctest.Wait()
		wantNil(t, "Shutdown()", l.Shutdown(ctx))
		wantIs(t, "Lock() waiting in line at Shutdown", <-done, lock.ErrClosed)
		wantNil(t, "Unlock() by the holder", holder.Unlock(ctx, h))
		if ok, err := s.Exists(ctx, "r"); err != nil || ok {
			t.Errorf("Exists(r) after the holder released = %v, %v; want false", ok, err)
		}
	})
}

// TryLock never queues, nor does a locker whose tokens are fixed (two of
// its callers would share one place in line).
func TestQueuedOnlyForLockWithOwnTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := &lineStore{Store: memory.New()}
		holder := mustSingle(t, s, nil)
		h, err := holder.TryLock(ctx, "r", time.Minute)
		wantNil(t, "TryLock() by the holder", err)
		_, err = mustSingle(t, s, nil).TryLock(ctx, "r", time.Minute)
		wantIs(t, "TryLock() of a held lock", err, lock.ErrNotAcquired)
		fixed := mustSingle(t, s, &lock.Options{Tokens: tokengen.Fixed("f")})
		done := make(chan error)
		go func() {
			got, err := fixed.Lock(ctx, "r", time.Minute)
			if err == nil {
				err = fixed.Unlock(ctx, got)
			}
			done <- err
		}()
		synctest.Wait()
		wantNil(t, "Unlock() by the holder", holder.Unlock(ctx, h))
		wantNil(t, "Lock() with fixed tokens", <-done)
		if n := s.calls.Load(); n != 0 {
			t.Errorf("AcquireQueued called %d times by TryLock and a locker with fixed tokens; want none", n)
		}
	})
}

// A queued acquisition that took a free lock without waiting in line is
// an attempt like any other: its validity counts from the call, with no
// extension however slow the store answered (within the validity), and
// an answer past the validity is refused and the lock released.
func TestQueuedWithoutWaitIsAnAttempt(t *testing.T) {
	const ttl = time.Second
	const validity = ttl - 12*time.Millisecond
	for _, tc := range []struct {
		delay time.Duration
		taken bool
	}{{200 * time.Millisecond, true}, {validity, false}} {
		t.Run(fmt.Sprint(tc.delay), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				mem := memory.New()
				s := &lineStore{Store: mem}
				var ops storeOps
				l := mustSingle(t, s, &lock.Options{Hook: &ops})
				mem.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: tc.delay, Times: 2}) // both attempts
				began := time.Now()
				got, err := l.Lock(ctx, "r", ttl, lock.WithRetry(lock.Retry{Attempts: 2, Delay: time.Millisecond}))
				if s.calls.Load() == 0 {
					t.Fatal("Lock did not queue (no AcquireQueued call)")
				}
				for _, op := range ops.list() {
					if op == "extend" {
						t.Errorf("a Lock that took a free lock without waiting extended it (store calls %q); want no extension", ops.list())
					}
				}
				if !tc.taken {
					wantIs(t, "Lock() answered past the validity", err, lock.ErrUnavailable)
					if ok, err := s.Exists(ctx, "r"); err != nil || ok {
						t.Errorf("Exists(r) after a Lock answered past its validity = %v, %v; want false: the lock released", ok, err)
					}
					return
				}
				wantNil(t, "Lock()", err)
				if want := began.Add(validity); !got.ValidUntil.Equal(want) {
					t.Errorf("ValidUntil = %v after an answer %v late; want %v, counted from the call", got.ValidUntil.Sub(began), tc.delay, want.Sub(began))
				}
			})
		})
	}
}

// A Lock that retries Forever waits in its store's line in one queued
// acquisition while the lock is held for many times its TTL: leaving the
// line at the TTL would put it at the end again, behind everyone who
// asked meanwhile. A policy of a few attempts leaves at the bound, so
// that its attempts end.
func TestForeverQueuedWaitOutlastsTTL(t *testing.T) {
	for _, tc := range []struct {
		name  string
		retry lock.Retry
		calls int32 // AcquireQueued calls; 0: more than one
	}{
		{"Forever", lock.DefaultRetry, 1},
		{"Attempts 1000", lock.Retry{Attempts: 1000, Delay: 10 * time.Millisecond}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				s := &lineStore{Store: memory.New()}
				holder := mustSingle(t, s, nil)
				h, err := holder.TryLock(ctx, "r", time.Hour)
				wantNil(t, "TryLock() by the holder", err)
				l := mustSingle(t, s, nil)
				done := make(chan error)
				go func() {
					got, err := l.Lock(ctx, "r", time.Second, lock.WithRetry(tc.retry))
					if err == nil {
						err = l.Unlock(ctx, got)
					}
					done <- err
				}()
				time.Sleep(10 * time.Second) // ten of the waiter's TTLs
				wantNil(t, "Unlock() by the holder", holder.Unlock(ctx, h))
				wantNil(t, "Lock() after the release", <-done)
				switch n := s.calls.Load(); {
				case tc.calls > 0 && n != tc.calls:
					t.Errorf("%+v: AcquireQueued called %d times in a wait of ten TTLs; want %d: one wait in line", tc.retry, n, tc.calls)
				case tc.calls == 0 && n < 2:
					t.Errorf("%+v: AcquireQueued called %d times in a wait of ten TTLs; want more: each wait ends at its bound", tc.retry, n)
				}
			})
		})
	}
}

// A Lock that retries Forever stays in its store's line for a day at
// most: behind a hold of more than a day (a leader's term, say), it
// leaves the line and gets in again, at the end, once a day. The docs
// said it stayed until served or its context ended.
func TestForeverQueuedWaitIsADayAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &lineStore{Store: memory.New()}
		holdElsewhere(t, s, "r", 30*time.Hour)
		l := mustSingle(t, s, nil)
		_, err := l.Lock(t.Context(), "r", time.Second)
		wantNil(t, "Lock() behind a hold of 30h", err)
		if n := s.calls.Load(); n != 2 {
			t.Errorf("AcquireQueued called %d times in a wait of 30h; want 2: the first wait in line ends after a day", n)
		}
	})
}
