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
)

// A canceled Lock whose acquisition reaches the store after the cleanup
// release (a request already on its way when the caller gave up) leaves
// nothing behind: the locker cannot be sure of the outcome when the
// release finds nothing, so it releases again in the background.
func TestCanceledLockCleansUpALateLanding(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "multi"}[multi], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ms, ls := memStores(3)
				var l lock.Locker = mustSingle(t, ls[0], nil)
				if multi {
					l = mustMulti(t, ls, nil)
				}
				for _, m := range ms {
					m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 5 * time.Millisecond, InFlight: true})
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
				defer cancel()
				_, err := l.Lock(ctx, "r", time.Minute)
				wantIs(t, "Lock(r) canceled while its acquisition is on its way", err, context.DeadlineExceeded)
				time.Sleep(time.Second) // the acquisitions land at 5ms; the background cleanup follows
				noResidue(t, ms...)
			})
		})
	}
}

// A failed Redlock attempt returns as soon as its outcome is decided and
// the kind of failure can no longer change, without waiting for the
// stores still answering; those are released in the background once they
// answer.
func TestMultiFailedAttemptReturnsEarly(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ms, ls := memStores(5)
			l := mustMulti(t, ls, &lock.Options{StoreTimeout: time.Second})
			for _, m := range ms[:3] {
				holdElsewhere(t, m, "r", time.Hour)
			}
			for _, m := range ms[3:] {
				m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 40 * time.Millisecond})
			}
			start := time.Now()
			_, err := l.TryLock(t.Context(), "r", time.Minute)
			wantIs(t, "TryLock(r) held elsewhere on 3 of 5 stores", err, lock.ErrNotAcquired)
			if d := time.Since(start); d != 0 {
				t.Errorf("TryLock returned after %v; want at once: three refusals decide it", d)
			}
			time.Sleep(time.Second)
			noResidue(t, ms[3:]...)
			for _, m := range ms[:3] {
				m.Expire("r")
			}

			// Three failures and two stores still answering: whatever they
			// answer, the quorum is missed by failures, not contention.
			for _, m := range ms[:3] {
				m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})
			}
			for _, m := range ms[3:] {
				m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 40 * time.Millisecond})
			}
			start = time.Now()
			_, err = l.TryLock(t.Context(), "s", time.Minute)
			wantIs(t, "TryLock(s) with 3 of 5 stores failing", err, lock.ErrUnavailable)
			if d := time.Since(start); d != 0 {
				t.Errorf("TryLock returned after %v; want at once: three failures decide it", d)
			}
			time.Sleep(time.Second)
			noResidue(t, ms...)
		})
	})
}

// instantWait is a memory store whose WaitRelease returns at once while
// the resource is still held: a broken wait. It counts the waits and ends
// the test's context if they run away.
type instantWait struct {
	*memory.Store
	calls  atomic.Int64
	cancel context.CancelFunc
}

func (s *instantWait) WaitRelease(context.Context, string) error {
	if s.calls.Add(1) == 10000 {
		s.cancel()
	}
	return nil
}

// A store whose wait returns early does not make a waiting Lock spin: a
// wake is followed by an immediate attempt only a few times in a row, and
// then the retry delay is slept out.
func TestLockDoesNotSpinOnAWaitThatReturnsEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		s := &instantWait{Store: memory.New(), cancel: cancel}
		holdElsewhere(t, s.Store, "r", time.Hour)
		l := mustSingle(t, s, nil)
		_, err := l.Lock(ctx, "r", time.Minute)
		wantIs(t, "Lock(r) held elsewhere, with a wait that returns at once", err, context.DeadlineExceeded)
		if n := s.calls.Load(); n >= 10000 {
			t.Fatalf("Lock waited %d times within 10s; want a bounded retry loop", n)
		}
		if errors.Is(err, context.Canceled) {
			t.Fatal("the attempts ran away: the test canceled Lock")
		}
	})
}

// The background re-ask covers the stores that refused because a
// competing attempt held them: once that attempt released them, the lock
// climbs above a bare majority, so one more store loss does not drop it.
func TestMultiReasksStoresThatRefused(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			ms, ls := memStores(5)
			l := mustMulti(t, ls, nil) // store timeout: 50ms
			var competitor []lock.Lock
			for _, m := range ms[3:] {
				competitor = append(competitor, holdElsewhere(t, m, "r", time.Hour))
			}
			held, err := l.TryLock(ctx, "r", time.Second)
			wantNil(t, "TryLock(r) with 2 of 5 stores held by a competitor", err)
			// The competitor's attempt failed: it releases what it took.
			for i, m := range ms[3:] {
				wantNil(t, "competitor's release", m.Release(ctx, "r", competitor[i].Token))
			}
			time.Sleep(200 * time.Millisecond)
			if got := holds(t, ms, "r"); !all(got) {
				t.Fatalf("stores holding the lock after the competitor left = %v; want all five", got)
			}
			ms[0].Expire("r")
			ms[1].Expire("r")
			_, err = mustMulti(t, ls, nil).TryLock(ctx, "r", time.Second)
			wantIs(t, "another owner's TryLock(r) after two stores lost it", err, lock.ErrNotAcquired)
			wantNil(t, "Unlock(r)", l.Unlock(ctx, held))
			noResidue(t, ms...)
		})
	})
}

// failFirstBlockNext is a memory store whose releases of the first
// resource released (on any store sharing the state) fail, and whose
// releases of any other block until their context ends, telling blocked.
type failFirstBlockNext struct {
	m  *memory.Store
	st *releaseOrder
}

func (f failFirstBlockNext) Acquire(ctx context.Context, r, tok string, ttl time.Duration) error {
	return f.m.Acquire(ctx, r, tok, ttl)
}
func (f failFirstBlockNext) Exists(ctx context.Context, r string) (bool, error) {
	return f.m.Exists(ctx, r)
}

type releaseOrder struct {
	mu      sync.Mutex
	first   string
	blocked chan struct{}
	once    sync.Once
}

func (f failFirstBlockNext) Release(ctx context.Context, r, tok string) error {
	f.st.mu.Lock()
	if f.st.first == "" {
		f.st.first = r
	}
	first := f.st.first == r
	f.st.mu.Unlock()
	if first {
		return errors.New("connection refused")
	}
	f.st.once.Do(func() { close(f.st.blocked) })
	<-ctx.Done()
	return ctx.Err()
}

// UnlockAll whose context ends after one release failed and during
// another reports one outcome, the context's: it matched ErrUnavailable
// and context.Canceled both.
func TestUnlockAllContextEndsAfterAFailedRelease(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprint(n, " stores"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := &releaseOrder{blocked: make(chan struct{})}
				var stores []lock.Store
				for range n {
					stores = append(stores, failFirstBlockNext{memory.New(), st})
				}
				var l lock.Locker
				if n > 1 {
					l = mustMulti(t, stores, &lock.Options{StoreTimeout: time.Hour})
				} else {
					l = mustSingle(t, stores[0], &lock.Options{StoreTimeout: time.Hour})
				}
				for _, r := range []string{"a", "b"} {
					_, err := l.TryLock(t.Context(), r, time.Minute)
					wantNil(t, "TryLock("+r+")", err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				go func() {
					select {
					case <-st.blocked:
					case <-ctx.Done():
					}
					cancel()
				}()
				err := l.UnlockAll(ctx)
				cancel()
				if !errors.Is(err, context.Canceled) || errors.Is(err, lock.ErrUnavailable) {
					t.Errorf("UnlockAll() whose context was canceled after a release failed = %v; want it to match context.Canceled, not ErrUnavailable", err)
				}
			})
		})
	}
}
