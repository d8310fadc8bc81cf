package lock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A semaphore of plain locks of more than 16 permits watches 16 slots:
// its waits last the call's retry delay, not the locker's. It gave up its
// watch at the locker's MaxDelay (500ms) and then slept out the call's
// delay, an hour here, missing the releases of the slots it watched too.
func TestSlotSemaphoreWaitFollowsTheCallsDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		sem := mustSemaphore(t, mustSingle(t, withoutStart{m, m, m, m, m}, nil), 64) // no Permitter: plain locks
		var held []lock.Lock
		for range 64 {
			p, err := sem.TryLock(ctx, "jobs", 2*time.Hour)
			wantNil(t, "sem.TryLock(jobs)", err)
			held = append(held, p)
		}
		got := make(chan time.Time, 1)
		go func() {
			_, err := sem.Lock(ctx, "jobs", 2*time.Hour, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: time.Hour}))
			wantNil(t, "sem.Lock(jobs) waiting", err)
			got <- time.Now()
		}()
		time.Sleep(time.Second)
		for _, p := range held { // every slot freed: a watched one wakes the waiter
			wantNil(t, "sem.Unlock(permit)", sem.Unlock(ctx, p))
		}
		freed := time.Now()
		if took := (<-got).Sub(freed); took > 0 {
			t.Errorf("sem.Lock(jobs) took a permit %v after every permit was freed; want at once, woken by a watched slot's release", took)
		}
		wantNil(t, "sem.UnlockAll()", sem.UnlockAll(ctx))
	})
}

// EventRetry.Waiting is false when Lock sleeps: when no store that
// refused can notify, and when a writer waits for readers to leave.
func TestRetryEventWaitingOnlyWhenItWaits(t *testing.T) {
	t.Run("MultiLocker", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m0, m1, m2 := memory.New(memory.WithName("m0")), memory.New(), memory.New()
			for _, m := range []*memory.Store{m1, m2} {
				wantNil(t, "Acquire(r, other)", m.Acquire(t.Context(), "r", "other", time.Hour))
			}
			rec := &recorder{}
			l := mustMulti(t, []lock.Store{m0, basic{m1}, basic{m2}}, &lock.Options{Hook: rec}) // m0 notifies, free
			_, err := l.Lock(t.Context(), "r", time.Minute, lock.WithRetry(lock.Retry{Attempts: 2, Delay: 20 * time.Millisecond}))
			wantIs(t, "Lock(r) held on the stores that cannot notify", err, lock.ErrNotAcquired)
			wantRetryWaiting(t, rec.take(), false)
		})
	})
	t.Run("writer waiting for readers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := &recorder{}
			rw, err := lock.NewRWLocker(mustSingle(t, memory.New(), &lock.Options{Hook: rec}))
			wantNil(t, "NewRWLocker()", err)
			_, err = rw.Reader().TryLock(t.Context(), "r", time.Hour)
			wantNil(t, "Reader().TryLock(r)", err)
			rec.take()
			_, err = rw.Writer().Lock(t.Context(), "r", time.Minute, lock.WithRetry(lock.Retry{Attempts: 2, Delay: 20 * time.Millisecond}))
			wantIs(t, "Writer().Lock(r) with a reader in", err, lock.ErrNotAcquired)
			wantRetryWaiting(t, rec.take(), false)
		})
	})
}

func wantRetryWaiting(t *testing.T, events []string, want bool) {
	t.Helper()
	retries := slices.DeleteFunc(events, func(e string) bool { return !strings.Contains(e, " retry ") })
	if len(retries) == 0 {
		t.Fatalf("events %q: no retry; want one", events)
	}
	for _, e := range retries {
		if !strings.Contains(e, fmt.Sprintf("waiting=%v", want)) {
			t.Errorf("event %q; want waiting=%v", e, want)
		}
	}
}

// The default policy polls at first where a refusing store cannot
// notify, also when it is passed explicitly and when the store is one of
// a MultiLocker's whose other stores notify. The lock is released at
// 320ms: polling, an attempt comes within 20ms (the poll delay doubles
// once after 250ms); backing off from 10ms, the next attempt after 310ms
// comes at 405ms at the earliest.
func TestDefaultRetryPollsWhereRefusalsCannotNotify(t *testing.T) {
	for _, c := range []struct {
		name    string
		holding int // stores that cannot notify, held by another
		multi   bool
		opts    []lock.LockOption
	}{
		{"WithRetry(DefaultRetry)", 1, false, []lock.LockOption{lock.WithRetry(lock.DefaultRetry)}},
		{"Options.Retry DefaultRetry", 1, false, nil},
		{"MultiLocker, one store notifying", 2, true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				var held []*memory.Store
				var stores []lock.Store
				if c.multi {
					stores = append(stores, memory.New()) // notifies; free
				}
				for range c.holding {
					m := memory.New()
					wantNil(t, "Acquire(r, other)", m.Acquire(ctx, "r", "other", time.Hour))
					held = append(held, m)
					stores = append(stores, basic{m})
				}
				var l lock.Locker
				if c.multi {
					l = mustMulti(t, stores, nil)
				} else {
					retry := lock.DefaultRetry
					l = mustSingle(t, stores[0], &lock.Options{Retry: &retry})
				}
				const release = 320 * time.Millisecond
				start := time.Now()
				go func() {
					time.Sleep(release)
					for _, m := range held {
						wantNil(t, "Release(r, other)", m.Release(context.Background(), "r", "other"))
					}
				}()
				_, err := l.Lock(ctx, "r", time.Minute, c.opts...)
				wantNil(t, "Lock(r)", err)
				if late := time.Since(start) - release; late > 20*time.Millisecond {
					t.Errorf("Lock(r) returned %v after the release at %v; want within 20ms: the default policy polls at first where refusing stores cannot notify", late, release)
				}
			})
		})
	}
}

// retryDelays records the delays EventRetry reports.
type retryDelays struct {
	mu sync.Mutex
	d  []time.Duration
}

func (h *retryDelays) Observe(_ context.Context, e lock.Event) {
	if e.Kind == lock.EventRetry {
		h.mu.Lock()
		h.d = append(h.d, e.Delay)
		h.mu.Unlock()
	}
}

// A writer with the default policy polls at first on a store that cannot
// notify, whatever its TTL: the policy it makes of the default (delays
// bounded by a quarter of the TTL) stays the default's.
func TestWriterDefaultRetryPolls(t *testing.T) {
	for _, ttl := range []time.Duration{4 * time.Second, time.Second} {
		t.Run(ttl.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := basic{memory.New()}
				h := &retryDelays{}
				rw, err := lock.NewRWLocker(mustSingle(t, m, &lock.Options{Hook: h}))
				wantNil(t, "NewRWLocker()", err)
				holdElsewhere(t, m, "res~write", 240*time.Millisecond) // another writer's intent
				_, err = rw.Writer().Lock(t.Context(), "res", ttl)
				wantNil(t, "Writer().Lock(res)", err)
				if len(h.d) < 20 {
					t.Errorf("Writer().Lock(res, %v) retried %d times in 240ms, delays %v; want one every 5-10ms: the default policy polls", ttl, len(h.d), h.d)
				}
			})
		})
	}
}

// countingForeign is a Locker of another package, counting its TryLocks:
// a semaphore over it cannot see its stores.
type countingForeign struct {
	lock.Locker
	tries atomic.Int64
}

func (f *countingForeign) TryLock(ctx context.Context, r string, ttl time.Duration) (lock.Lock, error) {
	f.tries.Add(1)
	return f.Locker.TryLock(ctx, r, ttl)
}

// Over a Locker of another package, whose stores may notify, the default
// policy backs off from the start rather than poll.
func TestDefaultRetryDoesNotPollAForeignLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &countingForeign{Locker: mustSingle(t, memory.New(), nil)}
		sem := mustSemaphore(t, f, 1)
		_, err := sem.TryLock(t.Context(), "res", 240*time.Millisecond) // free at its TTL
		wantNil(t, "sem.TryLock(res)", err)
		f.tries.Store(0)
		_, err = sem.Lock(t.Context(), "res", time.Second)
		wantNil(t, "sem.Lock(res)", err)
		if n := f.tries.Load(); n > 12 {
			t.Errorf("sem.Lock(res) over a foreign locker made %d TryLocks in 240ms; want a backoff from 10ms (about 7)", n)
		}
	})
}

// blockUntilDone is a store whose Acquire waits for its context to end.
type blockUntilDone struct{ basic }

func (blockUntilDone) Acquire(ctx context.Context, _, _ string, _ time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

// A Lock whose context is canceled with a cause does not repeat the
// cause as its last attempt's error.
func TestCanceledWithCauseNotRepeated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustSingle(t, blockUntilDone{basic{memory.New()}}, nil)
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(20*time.Millisecond, func() { cancel(errors.New("boom")) })
		_, err := l.Lock(ctx, "res", time.Second)
		wantIs(t, "Lock(res) canceled with a cause", err, context.Canceled)
		if strings.Contains(err.Error(), "last attempt") {
			t.Errorf("Lock(res) canceled with a cause = %q; want the context's error told once, not again as the last attempt's", err)
		}
	})
}

// countAttempts counts the attempts of Lock calls.
type countAttempts struct{ n atomic.Int64 }

func (c *countAttempts) Observe(_ context.Context, e lock.Event) {
	if e.Op == "lock" && e.Kind == lock.EventAttempt {
		c.n.Add(1)
	}
}

// A Semaphore or an RWLocker over a Redlock waits for a release on the
// stores that hold the name: a name held by a quorum but not by one store
// (restarted empty, or it refused the holder) made that store's wait
// return at once, and Lock spun in bursts of attempts (88 in 1s). A
// semaphore's wait lasts until a release; a reader waiting for a writer
// looks again at the retry delay (see rwSide.wait), so its attempts
// follow the default policy's backoff, 10ms doubling to 500ms: 7 to 9 in
// 1s.
func TestDerivedRedlockWaitsOnTheStoresHolding(t *testing.T) {
	for name, most := range map[string]int64{"Semaphore": 3, "RWLocker reader": 10} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				ms := []*memory.Store{memory.New(), memory.New(), memory.New()}
				count := &countAttempts{}
				ml := mustMulti(t, []lock.Store{ms[0], ms[1], ms[2]}, &lock.Options{Hook: count})
				var holder, waiter lock.Locker
				held := "jobs~permit0"
				if name == "Semaphore" {
					sem := mustSemaphore(t, ml, 1)
					holder, waiter = sem, sem
				} else {
					rw, err := lock.NewRWLocker(ml)
					wantNil(t, "NewRWLocker()", err)
					holder, waiter, held = rw.Writer(), rw.Reader(), "jobs~write"
				}
				_, err := holder.TryLock(ctx, "jobs", time.Hour)
				wantNil(t, "TryLock(jobs)", err)
				ms[2].Expire(held) // a quorum still holds it
				count.n.Store(0)
				lctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				_, err = waiter.Lock(lctx, "jobs", time.Hour)
				wantIs(t, "Lock(jobs) held for an hour", err, context.DeadlineExceeded)
				if n := count.n.Load(); n > most {
					t.Errorf("Lock(jobs), held by a quorum for an hour, made %d attempts in 1s; want at most %d", n, most)
				}
			})
		})
	}
}
