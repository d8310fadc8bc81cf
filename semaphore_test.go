package lock_test

import (
	"context"
	"encoding/json"
	"errors"
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

// semSetup is a way to build the lockers a semaphore or read-write lock is
// made over: natively (a Permitter), from plain locks on one store with
// and without the optional capabilities, and over Redlock.
type semSetup struct {
	name string
	// newLocker returns a new locker over the setup's stores: lockers from
	// one call of stores share them, as processes share servers.
	stores func() (mems []*memory.Store, newLocker func(t *testing.T) lock.Locker)
}

var semSetups = []semSetup{
	{"native", func() ([]*memory.Store, func(t *testing.T) lock.Locker) {
		m := memory.New()
		return []*memory.Store{m}, func(t *testing.T) lock.Locker { return mustSingle(t, m, nil) }
	}},
	{"slots", func() ([]*memory.Store, func(t *testing.T) lock.Locker) {
		m := memory.New()
		return []*memory.Store{m}, func(t *testing.T) lock.Locker { return mustSingle(t, withoutStart{m, m, m, m, m}, nil) }
	}},
	{"slots-basic", func() ([]*memory.Store, func(t *testing.T) lock.Locker) {
		m := memory.New()
		return []*memory.Store{m}, func(t *testing.T) lock.Locker { return mustSingle(t, basic{m}, nil) }
	}},
	{"redlock", func() ([]*memory.Store, func(t *testing.T) lock.Locker) {
		ms, ls := memStores(3)
		return ms, func(t *testing.T) lock.Locker { return mustMulti(t, ls, nil) }
	}},
}

// eachSemSetup runs test once per setup, in a synctest bubble.
func eachSemSetup(t *testing.T, test func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker)) {
	for _, s := range semSetups {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mems, newLocker := s.stores()
				test(t, mems, newLocker)
			})
		})
	}
}

func mustSemaphore(t *testing.T, l lock.Locker, limit int) *lock.Semaphore {
	t.Helper()
	s, err := lock.NewSemaphore(l, limit)
	if err != nil {
		t.Fatalf("NewSemaphore(locker, %d) = %v", limit, err)
	}
	return s
}

// noPermits fails the test if any store still holds a permit or a slot's
// lock on resource (the limit marker may stay until its TTL).
func noPermits(t *testing.T, mems []*memory.Store, resource string) {
	t.Helper()
	for _, m := range mems {
		if n, err := m.Permits(t.Context(), resource); err != nil || n != 0 {
			t.Errorf("%s: Permits(%q) = %d, %v; want 0, nil", m, resource, n, err)
		}
		for _, r := range m.Resources() {
			if r != resource+"~limit" {
				t.Errorf("%s still holds %q; want nothing left locked", m, r)
			}
		}
	}
}

func TestSemaphoreLimit(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		sem := mustSemaphore(t, newLocker(t), 3)
		var held []lock.Lock
		for range 3 {
			l, err := sem.TryLock(ctx, "jobs", time.Minute)
			wantNil(t, "TryLock(jobs)", err)
			if l.Resource != "jobs" {
				t.Fatalf("TryLock(jobs).Resource = %q; want jobs", l.Resource)
			}
			held = append(held, l)
		}
		_, err := sem.TryLock(ctx, "jobs", time.Minute)
		wantIs(t, "TryLock(jobs) with 3 of 3 permits held", err, lock.ErrNotAcquired)
		if n, err := sem.Permits(ctx, "jobs"); n != 3 || err != nil {
			t.Fatalf("Permits(jobs) = %d, %v; want 3, nil", n, err)
		}
		if ok, err := sem.IsLocked(ctx, "jobs"); !ok || err != nil {
			t.Fatalf("IsLocked(jobs) = %v, %v; want true, nil", ok, err)
		}
		wantNil(t, "Unlock(permit 0)", sem.Unlock(ctx, held[0]))
		wantIs(t, "Unlock(permit 0) again", sem.Unlock(ctx, held[0]), lock.ErrNotHeld)
		if n, err := sem.Permits(ctx, "jobs"); n != 2 || err != nil {
			t.Fatalf("Permits(jobs) after one Unlock = %d, %v; want 2, nil", n, err)
		}
		_, err = sem.TryLock(ctx, "jobs", time.Minute)
		wantNil(t, "TryLock(jobs) after one Unlock", err)
		wantNil(t, "UnlockAll()", sem.UnlockAll(ctx))
		noPermits(t, mems, "jobs")
		if ok, err := sem.IsLocked(ctx, "jobs"); ok || err != nil {
			t.Fatalf("IsLocked(jobs) after UnlockAll = %v, %v; want false, nil", ok, err)
		}
	})
}

// A permit is a plain value: another process's semaphore over the same
// stores releases and extends it.
func TestSemaphoreForeignUnlock(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		a, b := mustSemaphore(t, newLocker(t), 2), mustSemaphore(t, newLocker(t), 2)
		l, err := a.Lock(ctx, "jobs", time.Minute)
		wantNil(t, "a.Lock(jobs)", err)
		data, err := json.Marshal(l)
		wantNil(t, "json.Marshal(permit)", err)
		var got lock.Lock
		wantNil(t, "json.Unmarshal(permit)", json.Unmarshal(data, &got))
		if len(mems) > 1 || t.Name() != "TestSemaphoreForeignUnlock/slots-basic" {
			got, err = b.Extend(ctx, got, time.Hour)
			wantNil(t, "b.Extend(a's permit)", err)
		}
		wantNil(t, "b.Unlock(a's permit)", b.Unlock(ctx, got))
		noPermits(t, mems, "jobs")
	})
}

func TestSemaphoreLimitMismatch(t *testing.T) {
	for _, s := range semSetups {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				mems, newLocker := s.stores()
				two, three := mustSemaphore(t, newLocker(t), 2), mustSemaphore(t, newLocker(t), 3)
				_, err := two.TryLock(ctx, "jobs", time.Minute)
				wantNil(t, "two.TryLock(jobs)", err)
				_, err = three.Lock(ctx, "jobs", time.Minute)
				if s.name == "slots-basic" {
					// Without Extend a held marker cannot be told apart:
					// documented as not detected.
					wantNil(t, "three.Lock(jobs) on a store that cannot extend", err)
					return
				}
				wantIs(t, "three.Lock(jobs) while two holds a permit", err, lock.ErrLimitMismatch)
				wantIs(t, "three.Lock(jobs) while two holds a permit", err, lock.ErrInvalid)
				wantNil(t, "two.UnlockAll()", two.UnlockAll(ctx))
				noPermits(t, mems, "jobs")
			})
		})
	}
}

// A Lock waiting for a permit wakes when one is released, not at its
// retry delay (an hour here), on stores that can notify.
func TestSemaphoreWakesOnRelease(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		if len(mems) == 1 && t.Name() == "TestSemaphoreWakesOnRelease/slots-basic" {
			t.Skip("a store without lock.Waiter cannot notify")
		}
		ctx := t.Context()
		sem := mustSemaphore(t, newLocker(t), 2)
		a, _ := sem.TryLock(ctx, "jobs", time.Minute)
		_, err := sem.TryLock(ctx, "jobs", time.Minute)
		wantNil(t, "TryLock(jobs)", err)
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := sem.Lock(ctx, "jobs", time.Minute, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: time.Hour}))
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Lock(jobs) with 2 of 2 permits held = %v; want it to wait", err)
		default:
		}
		wantNil(t, "Unlock(a)", sem.Unlock(ctx, a))
		wantNil(t, "Lock(jobs) after a release", <-done)
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("Lock(jobs) returned %v after the release; want at once (woken by the release)", waited)
		}
		wantNil(t, "UnlockAll()", sem.UnlockAll(ctx))
	})
}

// Expiry frees a permit; Extend keeps it; an expired permit is not
// extended.
func TestSemaphoreExpiryAndExtend(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		sem := mustSemaphore(t, newLocker(t), 1)
		l, err := sem.TryLock(ctx, "jobs", time.Second)
		wantNil(t, "TryLock(jobs)", err)
		if t.Name() != "TestSemaphoreExpiryAndExtend/slots-basic" {
			time.Sleep(700 * time.Millisecond)
			l, err = sem.Extend(ctx, l, time.Second)
			wantNil(t, "Extend(permit)", err)
			time.Sleep(700 * time.Millisecond)
			_, err = sem.TryLock(ctx, "jobs", time.Second)
			wantIs(t, "TryLock(jobs) after Extend, before the new TTL", err, lock.ErrNotAcquired)
		}
		time.Sleep(2 * time.Second)
		if _, err := sem.Extend(ctx, l, time.Second); !errors.Is(err, lock.ErrNotHeld) && !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("Extend(expired permit) = %v; want ErrNotHeld", err)
		}
		l, err = sem.TryLock(ctx, "jobs", time.Second)
		wantNil(t, "TryLock(jobs) after the permit expired", err)
		wantNil(t, "Unlock(permit)", sem.Unlock(ctx, l))
	})
}

// Concurrent holders never exceed the limit, and reach it.
func TestSemaphoreAtMostLimit(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		const limit, workers, rounds = 3, 8, 5
		ctx := t.Context()
		var inside, most atomic.Int32
		var wg sync.WaitGroup
		for range workers {
			sem := mustSemaphore(t, newLocker(t), limit)
			wg.Go(func() {
				for range rounds {
					err := lock.Run(ctx, sem, "jobs", time.Minute, func(ctx context.Context, l lock.Lock) error {
						n := inside.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						time.Sleep(10 * time.Millisecond)
						inside.Add(-1)
						return nil
					}, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: time.Millisecond}))
					if err != nil {
						t.Errorf("Run(sem, jobs) = %v; want nil", err)
						return
					}
				}
			})
		}
		wg.Wait()
		if m := most.Load(); m != limit {
			t.Errorf("most holders at once = %d; want %d (the limit)", m, limit)
		}
		noPermits(t, mems, "jobs")
	})
}

func TestSemaphoreBadInput(t *testing.T) {
	m := memory.New()
	l := mustSingle(t, m, nil)
	_, err := lock.NewSemaphore(nil, 1)
	wantIs(t, "NewSemaphore(nil, 1)", err, lock.ErrInvalid)
	_, err = lock.NewSemaphore((*lock.SingleLocker)(nil), 1)
	wantIs(t, "NewSemaphore((*SingleLocker)(nil), 1)", err, lock.ErrInvalid)
	_, err = lock.NewSemaphore(l, 0)
	wantIs(t, "NewSemaphore(locker, 0)", err, lock.ErrInvalid)
	_, err = lock.NewSemaphore(mustSingle(t, basic{m}, nil), 1025)
	wantIs(t, "NewSemaphore(locker of plain locks, 1025)", err, lock.ErrInvalid)
	if _, err := lock.NewSemaphore(l, 1<<20); err != nil {
		t.Fatalf("NewSemaphore(locker over a Permitter, 1<<20) = %v; want nil", err)
	}
	slots := mustSemaphore(t, mustSingle(t, basic{m}, nil), 2)
	_, err = slots.Permits(t.Context(), "")
	wantIs(t, "Permits(\"\")", err, lock.ErrInvalid)
}

// Shutdown of the locker a semaphore is built on makes the semaphore's
// Lock fail with ErrClosed at once rather than retry.
func TestSemaphoreOverShutLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, withoutStart{m, m, m, m, m}, nil)
		sem := mustSemaphore(t, l, 2)
		wantNil(t, "Shutdown()", l.Shutdown(t.Context()))
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		_, err := sem.Lock(ctx, "jobs", time.Minute)
		wantIs(t, "sem.Lock(jobs) over a shut locker", err, lock.ErrClosed)
	})
}

// A permit whose acquisition had an unknown outcome (the reply was lost
// after the store took it) is released, not left held, and the error is
// ErrUnavailable, never ErrNotAcquired.
func TestSemaphoreLostReplyCleanedUp(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		sem := mustSemaphore(t, newLocker(t), 2)
		for _, m := range mems {
			m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset, AfterApply: true, Times: memory.Always})
		}
		_, err := sem.TryLock(ctx, "jobs", time.Minute)
		wantIs(t, "TryLock(jobs) with every reply lost", err, lock.ErrUnavailable)
		if errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("TryLock(jobs) with every reply lost = %v; want no ErrNotAcquired", err)
		}
		for _, m := range mems {
			m.ClearFaults()
		}
		time.Sleep(2 * time.Second) // the background releases, if any
		noPermits(t, mems, "jobs")
	})
}

// Shutdown releases every permit the semaphore holds and refuses new
// ones; the locker under it stays in service.
func TestSemaphoreShutdown(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		l := newLocker(t)
		sem := mustSemaphore(t, l, 3)
		for range 2 {
			_, err := sem.TryLock(ctx, "jobs", time.Minute)
			wantNil(t, "TryLock(jobs)", err)
		}
		wantNil(t, "Shutdown()", sem.Shutdown(ctx))
		noPermits(t, mems, "jobs")
		_, err := sem.TryLock(ctx, "jobs", time.Minute)
		wantIs(t, "TryLock(jobs) after Shutdown", err, lock.ErrClosed)
		held, err := l.TryLock(ctx, "other", time.Minute)
		wantNil(t, "the locker's TryLock(other) after the semaphore's Shutdown", err)
		wantNil(t, "the locker's Unlock(other)", l.Unlock(ctx, held))
	})
}

// A semaphore over a SingleLocker whose store keeps permits takes them
// with the locker's options: its hook sees the permit calls, and its
// token generator makes the permits' tokens.
func TestSemaphoreNativeUsesLockerOptions(t *testing.T) {
	rec := &recorder{}
	l := mustSingle(t, memory.New(), &lock.Options{Hook: rec, Tokens: fixedTokens("permit-token")})
	sem := mustSemaphore(t, l, 2)
	p, err := sem.TryLock(t.Context(), "jobs", time.Minute)
	wantNil(t, "TryLock(jobs)", err)
	if p.Token != "permit-token" {
		t.Errorf("permit token = %q; want %q, from the locker's Options.Tokens", p.Token, "permit-token")
	}
	wantNil(t, "Unlock(permit)", sem.Unlock(t.Context(), p))
	got := strings.Join(rec.take(), "\n")
	for _, want := range []string{"trylock store call memory acquire ok", "trylock acquired after 1 attempt(s)", "unlock released ok"} {
		if !strings.Contains(got, want) {
			t.Errorf("the locker's hook saw:\n%s\nwant a line with %q", got, want)
		}
	}
}

type fixedTokens string

func (f fixedTokens) Token() (string, error) { return string(f), nil }

// With Options.LockDelay, a permit whose holder vanished stays taken for
// the delay after its TTL, as a lock does, on every setup; and the limit
// marker of a semaphore of plain locks lives as long as the permits, so a
// caller with another limit is still refused then.
func TestSemaphoreLockDelay(t *testing.T) {
	const ttl, delay = time.Second, time.Minute
	for _, s := range semSetups {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mems, _ := s.stores()
				var l lock.Locker
				opts := &lock.Options{LockDelay: delay}
				switch s.name {
				case "native":
					l = mustSingle(t, mems[0], opts)
				case "redlock":
					ls := make([]lock.Store, len(mems))
					for i, m := range mems {
						ls[i] = m
					}
					l = mustMulti(t, ls, opts)
				default:
					l = mustSingle(t, withoutStart{mems[0], mems[0], mems[0], mems[0], mems[0]}, opts)
				}
				sem := mustSemaphore(t, l, 1)
				if _, err := sem.Lock(t.Context(), "r", ttl); err != nil {
					t.Fatal(err)
				}
				time.Sleep(ttl + delay/2) // the holder vanished: past its TTL, within the delay
				if _, err := sem.TryLock(t.Context(), "r", ttl); !errors.Is(err, lock.ErrNotAcquired) {
					t.Errorf("TryLock within the lock delay of a vanished permit = %v; want ErrNotAcquired", err)
				}
				if s.name != "native" {
					other := mustSemaphore(t, l, 2)
					if _, err := other.TryLock(t.Context(), "r", ttl); !errors.Is(err, lock.ErrLimitMismatch) {
						t.Errorf("TryLock with another limit within the lock delay = %v; want ErrLimitMismatch", err)
					}
				}
				time.Sleep(delay)
				if _, err := sem.TryLock(t.Context(), "r", ttl); err != nil {
					t.Errorf("TryLock after the lock delay = %v; want nil", err)
				}
			})
		})
	}
}

// kindsHook records the kind and resource of every event.
type kindsHook struct {
	mu   sync.Mutex
	seen []string
}

func (h *kindsHook) Observe(_ context.Context, e lock.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, e.Kind.String()+" "+e.Resource+" "+outcome(e.Err))
}

func (h *kindsHook) saw(want string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.seen, want)
}

// The locker's hook sees a semaphore's and a read-write lock's own calls
// under the resource's name, built from plain locks too: a caller waiting
// for a permit, or a writer waiting for readers, is seen retrying.
func TestDerivedLockersReportToTheHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, stores := memStores(3)
		h := &kindsHook{}
		l := mustMulti(t, stores, &lock.Options{Hook: h})
		sem := mustSemaphore(t, l, 1)
		rw, err := lock.NewRWLocker(l)
		wantNil(t, "NewRWLocker", err)
		for name, side := range map[string][2]lock.Locker{"semaphore": {sem, sem}, "read-write lock": {rw.Reader(), rw.Writer()}} {
			held, err := side[0].Lock(t.Context(), "jobs", time.Minute)
			wantNil(t, name+": Lock(jobs)", err)
			if !h.saw("acquired jobs ok") {
				t.Errorf("%s: the hook saw no acquisition of jobs in %d events", name, len(h.seen))
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			_, err = side[1].Lock(ctx, "jobs", time.Minute)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: Lock(jobs) while held = %v; want DeadlineExceeded", name, err)
			}
			if !h.saw("retry jobs not-acquired") {
				t.Errorf("%s: the hook saw no retry on jobs, not acquired, in %d events", name, len(h.seen))
			}
			wantNil(t, name+": Unlock", side[0].Unlock(t.Context(), held))
			h.mu.Lock()
			h.seen = nil
			h.mu.Unlock()
		}
	})
}
