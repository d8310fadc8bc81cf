package lock_test

// Black-box tests of the documented contracts of Semaphore and RWLocker.
// They are written from the package documentation and docs/semaphores.md only.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	lock "github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// sxPlainStore exposes a memory store as a store of plain locks only:
// not a Permitter, so that semaphores over it are built from plain locks.
// It keeps Extender (so a limit mismatch is detectable), Waiter and Fencer.
type sxPlainStore struct{ m *memory.Store }

func (p sxPlainStore) Acquire(ctx context.Context, r, tok string, ttl time.Duration) error {
	return p.m.Acquire(ctx, r, tok, ttl)
}
func (p sxPlainStore) Release(ctx context.Context, r, tok string) error {
	return p.m.Release(ctx, r, tok)
}
func (p sxPlainStore) Exists(ctx context.Context, r string) (bool, error) {
	return p.m.Exists(ctx, r)
}
func (p sxPlainStore) Extend(ctx context.Context, r, tok string, ttl time.Duration) error {
	return p.m.Extend(ctx, r, tok, ttl)
}
func (p sxPlainStore) WaitRelease(ctx context.Context, r string) error {
	return p.m.WaitRelease(ctx, r)
}
func (p sxPlainStore) AcquireFenced(ctx context.Context, r, tok string, ttl time.Duration) (uint64, error) {
	return p.m.AcquireFenced(ctx, r, tok, ttl)
}

var (
	_ lock.Permitter    = (*memory.Store)(nil)
	_ lock.PermitWaiter = (*memory.Store)(nil)
)

// sxBuild makes a fresh locker over a store, natively or from plain locks.
type sxBuild struct {
	name string
	// wrap turns the memory store into the store the locker is built on.
	wrap func(m *memory.Store) lock.Store
}

var sxBuilds = []sxBuild{
	{"native", func(m *memory.Store) lock.Store { return m }},
	{"derived", func(m *memory.Store) lock.Store { return sxPlainStore{m} }},
}

func sxSem(t *testing.T, l lock.Locker, n int) *lock.Semaphore {
	t.Helper()
	s, err := lock.NewSemaphore(l, n)
	if err != nil {
		t.Fatalf("NewSemaphore(locker, %d) = %v; want nil", n, err)
	}
	return s
}

func sxRW(t *testing.T, l lock.Locker) *lock.RWLocker {
	t.Helper()
	rw, err := lock.NewRWLocker(l)
	if err != nil {
		t.Fatalf("NewRWLocker = %v; want nil", err)
	}
	return rw
}

// sxForBuilds runs f once per way of building, each inside a synctest bubble
// with a fresh memory store created in it.
func sxForBuilds(t *testing.T, f func(t *testing.T, m *memory.Store, store lock.Store)) {
	for _, b := range sxBuilds {
		t.Run(b.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := memory.New()
				f(t, m, b.wrap(m))
			})
		})
	}
}

const sxTTL = time.Minute

// ---------------------------------------------------------------- construction

func TestSpecSemNewRefusesNilLocker(t *testing.T) {
	if _, err := lock.NewSemaphore(nil, 2); !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("NewSemaphore(nil, 2) = %v; want ErrInvalid", err)
	}
}

func TestSpecSemNewRefusesLimitBelowOne(t *testing.T) {
	locker := mustSingle(t, memory.New(), nil)
	for _, n := range []int{0, -1} {
		if _, err := lock.NewSemaphore(locker, n); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("NewSemaphore(locker, %d) = %v; want ErrInvalid", n, err)
		}
	}
}

func TestSpecSemNewDerivedLimitAtMost1024(t *testing.T) {
	derived := mustSingle(t, sxPlainStore{memory.New()}, nil)
	if _, err := lock.NewSemaphore(derived, 1025); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("NewSemaphore(plain-lock locker, 1025) = %v; want ErrInvalid", err)
	}
	if _, err := lock.NewSemaphore(derived, 1024); err != nil {
		t.Errorf("NewSemaphore(plain-lock locker, 1024) = %v; want nil", err)
	}
	native := mustSingle(t, memory.New(), nil)
	if _, err := lock.NewSemaphore(native, 5000); err != nil {
		t.Errorf("NewSemaphore(native locker, 5000) = %v; want nil (the 1024 cap is for plain locks)", err)
	}
}

func TestSpecSemLimitReported(t *testing.T) {
	sem := sxSem(t, mustSingle(t, memory.New(), nil), 7)
	if got := sem.Limit(); got != 7 {
		t.Fatalf("Limit() = %d; want 7", got)
	}
}

func TestSpecSemIsLocker(t *testing.T) {
	var _ lock.Locker = (*lock.Semaphore)(nil)
}

// ---------------------------------------------------------------- counting

func TestSpecSemLimitEnforced(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 3)
		for i := range 3 {
			if _, err := sem.TryLock(ctx, "r", sxTTL); err != nil {
				t.Fatalf("TryLock #%d with limit 3 = %v; want nil", i+1, err)
			}
		}
		if _, err := sem.TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("TryLock #4 with limit 3 = %v; want ErrNotAcquired", err)
		}
	})
}

func TestSpecSemPermitsCounted(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 4)
		if n, err := sem.Permits(ctx, "r"); err != nil || n != 0 {
			t.Fatalf("Permits(free) = %d, %v; want 0, nil", n, err)
		}
		var ls []lock.Lock
		for range 3 {
			l, err := sem.TryLock(ctx, "r", sxTTL)
			if err != nil {
				t.Fatalf("TryLock = %v", err)
			}
			ls = append(ls, l)
		}
		if n, err := sem.Permits(ctx, "r"); err != nil || n != 3 {
			t.Fatalf("Permits after 3 TryLocks = %d, %v; want 3, nil", n, err)
		}
		if err := sem.Unlock(ctx, ls[0]); err != nil {
			t.Fatalf("Unlock(permit) = %v; want nil", err)
		}
		if n, err := sem.Permits(ctx, "r"); err != nil || n != 2 {
			t.Fatalf("Permits after one Unlock = %d, %v; want 2, nil", n, err)
		}
	})
}

func TestSpecSemUnlockFreesPermit(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 2)
		a, _ := sem.TryLock(ctx, "r", sxTTL)
		if _, err := sem.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("TryLock #2 = %v", err)
		}
		if err := sem.Unlock(ctx, a); err != nil {
			t.Fatalf("Unlock(held permit) = %v; want nil", err)
		}
		if _, err := sem.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("TryLock after a release at the limit = %v; want nil", err)
		}
	})
}

func TestSpecSemPermitsHaveOwnTokensAndResource(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 3)
		seen := map[string]bool{}
		for range 3 {
			l, err := sem.TryLock(ctx, "exports", sxTTL)
			if err != nil {
				t.Fatalf("TryLock = %v", err)
			}
			if l.Resource != "exports" {
				t.Errorf("permit.Resource = %q; want %q (the resource as given)", l.Resource, "exports")
			}
			if l.Token == "" || seen[l.Token] {
				t.Errorf("permit.Token = %q; want a non-empty token of its own", l.Token)
			}
			seen[l.Token] = true
		}
	})
}

func TestSpecSemResourcesIndependent(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 1)
		if _, err := sem.TryLock(ctx, "a", sxTTL); err != nil {
			t.Fatalf("TryLock(a) = %v", err)
		}
		if _, err := sem.TryLock(ctx, "b", sxTTL); err != nil {
			t.Fatalf("TryLock(b) while a is full = %v; want nil", err)
		}
	})
}

func TestSpecSemIsLocked(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 3)
		if held, err := sem.IsLocked(ctx, "r"); err != nil || held {
			t.Fatalf("IsLocked(free) = %v, %v; want false, nil", held, err)
		}
		l, _ := sem.TryLock(ctx, "r", sxTTL)
		if held, err := sem.IsLocked(ctx, "r"); err != nil || !held {
			t.Fatalf("IsLocked(one permit held) = %v, %v; want true, nil", held, err)
		}
		_ = sem.Unlock(ctx, l)
		if held, err := sem.IsLocked(ctx, "r"); err != nil || held {
			t.Fatalf("IsLocked(after release) = %v, %v; want false, nil", held, err)
		}
	})
}

func TestSpecSemPermitExpiresAtTTL(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 1)
		l, err := sem.TryLock(ctx, "r", sxTTL)
		if err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		time.Sleep(sxTTL + time.Second)
		if n, err := sem.Permits(ctx, "r"); err != nil || n != 0 {
			t.Fatalf("Permits after the TTL = %d, %v; want 0, nil", n, err)
		}
		if _, err := sem.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("TryLock after the only permit expired = %v; want nil", err)
		}
		if _, err := sem.Extend(ctx, l, sxTTL); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("Extend(expired permit) = %v; want ErrNotHeld", err)
		}
	})
}

// ---------------------------------------------------------------- extend / release

func TestSpecSemExtendKeepsPermit(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 1)
		l, err := sem.TryLock(ctx, "r", sxTTL)
		if err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		time.Sleep(sxTTL / 2)
		l2, err := sem.Extend(ctx, l, sxTTL)
		if err != nil {
			t.Fatalf("Extend(held permit) = %v; want nil", err)
		}
		if !l2.ValidUntil.After(l.ValidUntil) {
			t.Errorf("Extend: ValidUntil %v; want after the acquisition's %v", l2.ValidUntil, l.ValidUntil)
		}
		time.Sleep(sxTTL*3/4 + time.Second) // past the first TTL, within the extended one
		if n, err := sem.Permits(ctx, "r"); err != nil || n != 1 {
			t.Fatalf("Permits past the first TTL after Extend = %d, %v; want 1, nil", n, err)
		}
		if _, err := sem.TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("TryLock while the extended permit is held = %v; want ErrNotAcquired", err)
		}
		if err := sem.Unlock(ctx, l2); err != nil {
			t.Fatalf("Unlock(extended permit) = %v; want nil", err)
		}
	})
}

func TestSpecSemUnlockTwiceNotHeld(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 2)
		l, _ := sem.TryLock(ctx, "r", sxTTL)
		if err := sem.Unlock(ctx, l); err != nil {
			t.Fatalf("Unlock = %v", err)
		}
		if err := sem.Unlock(ctx, l); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("Unlock(released permit) = %v; want ErrNotHeld", err)
		}
	})
}

func TestSpecSemUnlockZeroLockInvalid(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		sem := sxSem(t, mustSingle(t, store, nil), 2)
		if err := sem.Unlock(t.Context(), lock.Lock{}); !errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("Unlock(zero Lock) = %v; want ErrInvalid", err)
		}
		if _, err := sem.TryLock(t.Context(), "", sxTTL); !errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("TryLock(empty resource) = %v; want ErrInvalid", err)
		}
	})
}

func TestSpecSemUnlockPlainLockNotHeld(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		locker := mustSingle(t, store, nil)
		sem := sxSem(t, locker, 2)
		plain, err := locker.TryLock(ctx, "r", sxTTL)
		if err != nil {
			t.Fatalf("locker.TryLock = %v", err)
		}
		if err := sem.Unlock(ctx, plain); !errors.Is(err, lock.ErrNotHeld) || errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("sem.Unlock(plain lock) = %v; want ErrNotHeld (not ErrInvalid)", err)
		}
		if held, _ := locker.IsLocked(ctx, "r"); !held {
			t.Fatalf("plain lock released by sem.Unlock of it; want it still held")
		}
		if _, err := sem.Extend(ctx, plain, sxTTL); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("sem.Extend(plain lock) = %v; want ErrNotHeld", err)
		}
	})
}

func TestSpecSemUnlockOtherLimitPermitNotHeld(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		locker := mustSingle(t, store, nil)
		sem2, sem3 := sxSem(t, locker, 2), sxSem(t, locker, 3)
		p, err := sem2.TryLock(ctx, "r", sxTTL)
		if err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		if err := sem3.Unlock(ctx, p); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("sem(3).Unlock(permit of sem(2)) = %v; want ErrNotHeld", err)
		}
		if n, _ := sem2.Permits(ctx, "r"); n != 1 {
			t.Fatalf("Permits after a foreign-limit Unlock = %d; want 1 (nothing released)", n)
		}
	})
}

func TestSpecSemUnlockOtherResourceNotHeld(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 2)
		p, _ := sem.TryLock(ctx, "a", sxTTL)
		other := p
		other.Resource = "b"
		if err := sem.Unlock(ctx, other); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("Unlock(permit of a, renamed b) = %v; want ErrNotHeld", err)
		}
		if n, _ := sem.Permits(ctx, "a"); n != 1 {
			t.Fatalf("Permits(a) = %d; want 1", n)
		}
	})
}

func TestSpecSemPermitReleasedByAnotherProcess(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		semA := sxSem(t, mustSingle(t, store, nil), 2)
		semB := sxSem(t, mustSingle(t, store, nil), 2) // another "process" over the same store
		p, err := semA.TryLock(ctx, "r", sxTTL)
		if err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var q lock.Lock
		if err := json.Unmarshal(raw, &q); err != nil {
			t.Fatal(err)
		}
		if err := semB.Unlock(ctx, q); err != nil {
			t.Fatalf("other semaphore (same stores, same limit).Unlock(JSON round-tripped permit) = %v; want nil", err)
		}
		if n, _ := semA.Permits(ctx, "r"); n != 0 {
			t.Fatalf("Permits after the release elsewhere = %d; want 0", n)
		}
	})
}

// ---------------------------------------------------------------- waiting

func TestSpecSemWaiterWakesOnRelease(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 1)
		held, _ := sem.TryLock(ctx, "r", time.Hour)
		done := make(chan error, 1)
		go func() {
			_, err := sem.Lock(ctx, "r", time.Hour)
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Lock returned %v while the only permit is held; want it to wait", err)
		default:
		}
		start := time.Now()
		if err := sem.Unlock(ctx, held); err != nil {
			t.Fatalf("Unlock = %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("waiting Lock after the release = %v; want nil", err)
		}
		// Woken by the release, not by the TTL of the permit it waited on.
		if waited := time.Since(start); waited >= time.Hour {
			t.Fatalf("waiter took %v (fake clock) after the release; want well under the hour-long TTL", waited)
		}
	})
}

// ---------------------------------------------------------------- limit mismatch

func TestSpecSemLimitMismatchNative(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		locker := mustSingle(t, memory.New(), nil)
		sem2, sem3 := sxSem(t, locker, 2), sxSem(t, locker, 3)
		if _, err := sem2.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		_, err := sem3.TryLock(ctx, "r", sxTTL)
		if !errors.Is(err, lock.ErrLimitMismatch) || !errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("sem(3).TryLock while sem(2) holds a permit = %v; want ErrLimitMismatch and ErrInvalid", err)
		}
		if n, _ := sem2.Permits(ctx, "r"); n != 1 {
			t.Fatalf("Permits after the mismatch = %d; want 1 (nothing left held)", n)
		}
	})
}

func TestSpecSemLimitMismatchNotRetried(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		locker := mustSingle(t, store, nil)
		sem1, sem2 := sxSem(t, locker, 1), sxSem(t, locker, 2)
		if _, err := sem1.TryLock(ctx, "r", 2*time.Hour); err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		// Lock retries by default until ctx ends; a mismatch must not be retried.
		_, err := sem2.Lock(ctx, "r", 2*time.Hour)
		if !errors.Is(err, lock.ErrLimitMismatch) {
			t.Fatalf("sem(2).Lock while sem(1) holds = %v; want ErrLimitMismatch", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("sem(2).Lock returned only when its context ended; want the mismatch at once")
		}
	})
}

func TestSpecSemLimitMismatchDerived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		locker := mustSingle(t, sxPlainStore{m}, nil)
		sem2, sem3 := sxSem(t, locker, 2), sxSem(t, locker, 3)
		if _, err := sem2.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		_, err := sem3.TryLock(ctx, "r", sxTTL)
		if !errors.Is(err, lock.ErrLimitMismatch) || !errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("sem(3).TryLock while sem(2) holds (plain locks with Extender) = %v; want ErrLimitMismatch and ErrInvalid", err)
		}
		if n, _ := sem2.Permits(ctx, "r"); n != 1 {
			t.Fatalf("Permits after the mismatch = %d; want 1 (the loser releases its slot)", n)
		}
		var slots []string
		for _, r := range m.Resources() {
			if strings.HasPrefix(r, "r~permit") {
				slots = append(slots, r)
			}
		}
		if len(slots) != 1 {
			t.Fatalf("slots held after the mismatch = %v; want exactly the one of sem(2)", slots)
		}
	})
}

func TestSpecSemDerivedSlotNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		sem := sxSem(t, mustSingle(t, sxPlainStore{m}, nil), 3)
		if _, err := sem.TryLock(t.Context(), "r", sxTTL); err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		got := m.Resources()
		var slot, marker bool
		for _, r := range got {
			switch {
			case r == "r~limit":
				marker = true
			case r == "r~permit0" || r == "r~permit1" || r == "r~permit2":
				slot = true
			}
		}
		if !slot || !marker {
			t.Fatalf("plain locks held for one permit of limit 3 = %v; want one of r~permit0..2 and r~limit", got)
		}
	})
}

func TestSpecSemNativeMismatchGoneOnceReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		locker := mustSingle(t, memory.New(), nil)
		sem2, sem3 := sxSem(t, locker, 2), sxSem(t, locker, 3)
		p, _ := sem2.TryLock(ctx, "r", sxTTL)
		if err := sem2.Unlock(ctx, p); err != nil {
			t.Fatalf("Unlock = %v", err)
		}
		if _, err := sem3.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("native sem(3).TryLock once every sem(2) permit is released = %v; want nil (mismatch only while permits are held)", err)
		}
	})
}

func TestSpecSemDerivedMarkerOutlivesRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		locker := mustSingle(t, sxPlainStore{memory.New()}, nil)
		sem2, sem3 := sxSem(t, locker, 2), sxSem(t, locker, 3)
		p, _ := sem2.TryLock(ctx, "r", sxTTL)
		if err := sem2.Unlock(ctx, p); err != nil {
			t.Fatalf("Unlock = %v", err)
		}
		if _, err := sem3.TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrLimitMismatch) {
			t.Fatalf("derived sem(3).TryLock after release, marker alive = %v; want ErrLimitMismatch", err)
		}
		time.Sleep(sxTTL + time.Second)
		if _, err := sem3.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("derived sem(3).TryLock once the marker's TTL ran out = %v; want nil", err)
		}
	})
}

func TestSpecSemMismatchUndetectedWithoutExtender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		locker := mustSingle(t, bbPlainStore{memory.New()}, nil)
		sem2, sem3 := sxSem(t, locker, 2), sxSem(t, locker, 3)
		if _, err := sem2.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		if _, err := sem3.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("sem(3).TryLock on a store without Extender = %v; want nil (documented: a held marker is taken to agree)", err)
		}
	})
}

// ---------------------------------------------------------------- fences

func TestSpecSemNativeFencesIncrease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, memory.New(), nil), 2)
		a, _ := sem.TryLock(ctx, "r", sxTTL)
		b, _ := sem.TryLock(ctx, "r", sxTTL)
		_ = sem.Unlock(ctx, a)
		_ = sem.Unlock(ctx, b)
		c, _ := sem.TryLock(ctx, "r", sxTTL)
		if a.Fence == 0 || !(a.Fence < b.Fence && b.Fence < c.Fence) {
			t.Fatalf("native permit fences = %d, %d, %d; want non-zero and strictly increasing", a.Fence, b.Fence, c.Fence)
		}
	})
}

func TestSpecSemDerivedFencesIncreasePerSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, sxPlainStore{memory.New()}, nil), 1)
		a, _ := sem.TryLock(ctx, "r", sxTTL)
		_ = sem.Unlock(ctx, a)
		b, _ := sem.TryLock(ctx, "r", sxTTL)
		if a.Fence == 0 || b.Fence <= a.Fence {
			t.Fatalf("fences of successive holders of the one slot = %d, %d; want non-zero and increasing", a.Fence, b.Fence)
		}
	})
}

// ---------------------------------------------------------------- native vs derived, plain locks

func TestSpecSemNativeAndDerivedCountedApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		native := sxSem(t, mustSingle(t, m, nil), 1)
		derived := sxSem(t, mustSingle(t, sxPlainStore{m}, nil), 1)
		if _, err := native.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("native TryLock = %v", err)
		}
		if _, err := derived.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("derived TryLock while a native permit of limit 1 is held = %v; want nil (documented: counted apart)", err)
		}
	})
}

func TestSpecSemAndPlainLockDoNotExclude(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		locker := mustSingle(t, store, nil)
		sem := sxSem(t, locker, 1)
		if _, err := locker.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("plain TryLock = %v", err)
		}
		if _, err := sem.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("sem.TryLock on a name held by a plain lock = %v; want nil", err)
		}
	})
}

func TestSpecSemNativeOneStoreCallPerAcquisition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var calls []lock.Event
		hook := sxHookFunc(func(_ context.Context, e lock.Event) {
			if e.Kind == lock.EventStoreCall {
				mu.Lock()
				calls = append(calls, e)
				mu.Unlock()
			}
		})
		sem := sxSem(t, mustSingle(t, memory.New(), &lock.Options{Hook: hook}), 1000)
		if _, err := sem.TryLock(t.Context(), "r", sxTTL); err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(calls) != 1 {
			t.Fatalf("store calls for one native permit at limit 1000 = %d (%+v); want 1", len(calls), calls)
		}
	})
}

type sxHookFunc func(context.Context, lock.Event)

func (f sxHookFunc) Observe(ctx context.Context, e lock.Event) { f(ctx, e) }

func TestSpecSemHookSeesResourceName(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		var mu sync.Mutex
		var acquired []string
		hook := sxHookFunc(func(_ context.Context, e lock.Event) {
			if e.Kind == lock.EventAcquired {
				mu.Lock()
				acquired = append(acquired, e.Resource)
				mu.Unlock()
			}
		})
		sem := sxSem(t, mustSingle(t, store, &lock.Options{Hook: hook}), 4)
		if _, err := sem.TryLock(t.Context(), "r", sxTTL); err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		found := false
		for _, r := range acquired {
			found = found || r == "r"
		}
		if !found {
			t.Fatalf("EventAcquired resources = %v; want one under the semaphore's resource %q", acquired, "r")
		}
	})
}

// ---------------------------------------------------------------- Run, shutdown, UnlockAll

func TestSpecSemRun(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 2)
		err := lock.Run(ctx, sem, "r", sxTTL, func(ctx context.Context, l lock.Lock) error {
			if n, err := sem.Permits(ctx, "r"); err != nil || n != 1 {
				t.Errorf("Permits inside Run = %d, %v; want 1, nil", n, err)
			}
			time.Sleep(3 * sxTTL) // Run keeps the permit extended
			if n, err := sem.Permits(ctx, "r"); err != nil || n != 1 {
				t.Errorf("Permits inside Run after 3 TTLs = %d, %v; want 1, nil (kept extended)", n, err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Run(sem) = %v; want nil", err)
		}
		if n, _ := sem.Permits(ctx, "r"); n != 0 {
			t.Fatalf("Permits after Run = %d; want 0 (released)", n)
		}
	})
}

func TestSpecSemShutdownReleasesAndRefuses(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		locker := mustSingle(t, store, nil)
		sem := sxSem(t, locker, 2)
		if _, err := sem.TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		if err := sem.Shutdown(ctx); err != nil {
			t.Fatalf("sem.Shutdown = %v; want nil", err)
		}
		observer := sxSem(t, mustSingle(t, store, nil), 2)
		if n, err := observer.Permits(ctx, "r"); err != nil || n != 0 {
			t.Fatalf("Permits after sem.Shutdown = %d, %v; want 0 (released)", n, err)
		}
		if _, err := sem.TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrClosed) {
			t.Fatalf("TryLock after sem.Shutdown = %v; want ErrClosed", err)
		}
		if _, err := locker.TryLock(ctx, "other", sxTTL); err != nil {
			t.Fatalf("underlying locker.TryLock after sem.Shutdown = %v; want nil (stays in service)", err)
		}
	})
}

func TestSpecSemLockerShutdownShutsSemaphore(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		locker := mustSingle(t, store, nil)
		sem := sxSem(t, locker, 1)
		if _, err := sem.TryLock(ctx, "r", time.Hour); err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := sem.Lock(waitCtx, "r", time.Hour)
			done <- err
		}()
		synctest.Wait()
		if err := locker.Shutdown(ctx); err != nil {
			t.Fatalf("locker.Shutdown = %v; want nil", err)
		}
		if err := <-done; !errors.Is(err, lock.ErrClosed) {
			t.Fatalf("sem.Lock waiting during locker.Shutdown = %v; want ErrClosed", err)
		}
		if waitCtx.Err() != nil {
			t.Fatalf("waiting Lock ended only with its context; want ErrClosed at once")
		}
		if _, err := sem.TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrClosed) {
			t.Fatalf("sem.TryLock after locker.Shutdown = %v; want ErrClosed", err)
		}
		observer := sxSem(t, mustSingle(t, store, nil), 1)
		if n, err := observer.Permits(ctx, "r"); err != nil || n != 0 {
			t.Fatalf("Permits after locker.Shutdown = %d, %v; want 0 (released)", n, err)
		}
	})
}

func TestSpecSemLockerShutdownEndsSemaphoreRun(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		locker := mustSingle(t, store, nil)
		sem := sxSem(t, locker, 1)
		entered := make(chan struct{})
		var cause error
		done := make(chan error, 1)
		go func() {
			done <- lock.Run(ctx, sem, "r", sxTTL, func(ctx context.Context, l lock.Lock) error {
				close(entered)
				<-ctx.Done()
				cause = context.Cause(ctx)
				return nil
			})
		}()
		<-entered
		if err := locker.Shutdown(ctx); err != nil {
			t.Fatalf("locker.Shutdown = %v", err)
		}
		err := <-done
		if !errors.Is(cause, lock.ErrLost) {
			t.Fatalf("cause of Run's context after locker.Shutdown = %v; want ErrLost", cause)
		}
		if !errors.Is(err, lock.ErrLost) {
			t.Fatalf("Run after locker.Shutdown = %v; want ErrLost joined", err)
		}
	})
}

func TestSpecSemLockerUnlockAllReleasesPermits(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		locker := mustSingle(t, store, nil)
		sem := sxSem(t, locker, 3)
		for range 2 {
			if _, err := sem.TryLock(ctx, "r", sxTTL); err != nil {
				t.Fatalf("TryLock = %v", err)
			}
		}
		if err := locker.UnlockAll(ctx); err != nil {
			t.Fatalf("locker.UnlockAll = %v", err)
		}
		if n, err := sem.Permits(ctx, "r"); err != nil || n != 0 {
			t.Fatalf("Permits after locker.UnlockAll = %d, %v; want 0", n, err)
		}
	})
}

func TestSpecSemUnlockAll(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		locker := mustSingle(t, store, nil)
		sem := sxSem(t, locker, 3)
		plain, _ := locker.TryLock(ctx, "p", sxTTL)
		for range 2 {
			_, _ = sem.TryLock(ctx, "r", sxTTL)
		}
		if err := sem.UnlockAll(ctx); err != nil {
			t.Fatalf("sem.UnlockAll = %v", err)
		}
		if n, _ := sem.Permits(ctx, "r"); n != 0 {
			t.Fatalf("Permits after sem.UnlockAll = %d; want 0", n)
		}
		if held, _ := locker.IsLocked(ctx, plain.Resource); !held {
			t.Fatalf("sem.UnlockAll released a plain lock of its locker; want only the semaphore's permits")
		}
	})
}

// ---------------------------------------------------------------- Redlock

func sxMulti(t *testing.T, n int) (*lock.MultiLocker, []*memory.Store) {
	t.Helper()
	var ms []*memory.Store
	var ss []lock.Store
	for range n {
		m := memory.New()
		ms = append(ms, m)
		ss = append(ss, m)
	}
	ml, err := lock.NewMulti(ss, nil)
	if err != nil {
		t.Fatalf("NewMulti = %v", err)
	}
	return ml, ms
}

func TestSpecSemOverMultiLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ml, _ := sxMulti(t, 3)
		sem := sxSem(t, ml, 2)
		for i := range 2 {
			if _, err := sem.TryLock(ctx, "r", sxTTL); err != nil {
				t.Fatalf("Redlock sem TryLock #%d = %v; want nil", i+1, err)
			}
		}
		if _, err := sem.TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Redlock sem TryLock #3 with limit 2 = %v; want ErrNotAcquired", err)
		}
		if n, err := sem.Permits(ctx, "r"); err != nil || n != 2 {
			t.Fatalf("Redlock Permits = %d, %v; want 2", n, err)
		}
		other := sxSem(t, ml, 3)
		if _, err := other.TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrLimitMismatch) {
			t.Fatalf("Redlock sem(3).TryLock while sem(2) holds = %v; want ErrLimitMismatch", err)
		}
	})
}

// ---------------------------------------------------------------- RWLocker

func TestSpecRWNewRWLockerRefusesNil(t *testing.T) {
	if _, err := lock.NewRWLocker(nil); !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("NewRWLocker(nil) = %v; want ErrInvalid", err)
	}
}

func TestSpecRWReadersShare(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, store, nil))
		for i := range 3 {
			if _, err := rw.Reader().TryLock(ctx, "r", sxTTL); err != nil {
				t.Fatalf("Reader().TryLock #%d = %v; want nil (readers share)", i+1, err)
			}
		}
		if held, err := rw.Reader().IsLocked(ctx, "r"); err != nil || !held {
			t.Fatalf("Reader().IsLocked with readers in = %v, %v; want true", held, err)
		}
	})
}

func TestSpecRWWriterExcludesReaders(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, store, nil))
		w, err := rw.Writer().TryLock(ctx, "r", sxTTL)
		if err != nil {
			t.Fatalf("Writer().TryLock = %v", err)
		}
		if _, err := rw.Reader().TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Reader().TryLock while a writer holds = %v; want ErrNotAcquired", err)
		}
		if _, err := rw.Writer().TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("second Writer().TryLock = %v; want ErrNotAcquired", err)
		}
		if err := rw.Writer().Unlock(ctx, w); err != nil {
			t.Fatalf("Writer().Unlock = %v", err)
		}
		if _, err := rw.Reader().TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("Reader().TryLock after the writer left = %v; want nil", err)
		}
	})
}

func TestSpecRWReaderExcludesWriter(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, store, nil))
		if _, err := rw.Reader().TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("Reader().TryLock = %v", err)
		}
		if _, err := rw.Writer().TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Writer().TryLock while a reader holds = %v; want ErrNotAcquired", err)
		}
		// A failed TryLock leaves no writer holding or waiting.
		if held, err := rw.Writer().IsLocked(ctx, "r"); err != nil || held {
			t.Fatalf("Writer().IsLocked after a failed Writer().TryLock = %v, %v; want false", held, err)
		}
		if _, err := rw.Reader().TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("Reader().TryLock after a failed Writer().TryLock = %v; want nil", err)
		}
	})
}

func TestSpecRWWaitingWriterNotStarved(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, store, nil))
		r1, err := rw.Reader().TryLock(ctx, "r", sxTTL)
		if err != nil {
			t.Fatalf("Reader().TryLock = %v", err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := rw.Writer().Lock(ctx, "r", sxTTL)
			done <- err
		}()
		synctest.Wait()
		if held, err := rw.Writer().IsLocked(ctx, "r"); err != nil || !held {
			t.Fatalf("Writer().IsLocked while a writer waits for readers = %v, %v; want true", held, err)
		}
		if _, err := rw.Reader().TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("new Reader().TryLock while a writer waits = %v; want ErrNotAcquired (readers stand aside)", err)
		}
		if err := rw.Reader().Unlock(ctx, r1); err != nil {
			t.Fatalf("Reader().Unlock = %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("waiting Writer().Lock after the reader left = %v; want nil", err)
		}
	})
}

func TestSpecRWReaderWakesWhenWriterLeaves(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, store, nil))
		w, _ := rw.Writer().TryLock(ctx, "r", time.Hour)
		done := make(chan error, 1)
		go func() {
			_, err := rw.Reader().Lock(ctx, "r", time.Hour)
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Reader().Lock returned %v while a writer holds; want it to wait", err)
		default:
		}
		if err := rw.Writer().Unlock(ctx, w); err != nil {
			t.Fatalf("Writer().Unlock = %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("waiting Reader().Lock after the writer left = %v; want nil", err)
		}
	})
}

func TestSpecRWCrossSideUnlockNotHeld(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, store, nil))
		rd, err := rw.Reader().TryLock(ctx, "a", sxTTL)
		if err != nil {
			t.Fatalf("Reader().TryLock = %v", err)
		}
		wr, err := rw.Writer().TryLock(ctx, "b", sxTTL)
		if err != nil {
			t.Fatalf("Writer().TryLock = %v", err)
		}
		if err := rw.Writer().Unlock(ctx, rd); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Writer().Unlock(reader's lock) = %v; want ErrNotHeld", err)
		}
		if err := rw.Reader().Unlock(ctx, wr); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Reader().Unlock(writer's lock) = %v; want ErrNotHeld", err)
		}
		if _, err := rw.Reader().Extend(ctx, wr, sxTTL); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Reader().Extend(writer's lock) = %v; want ErrNotHeld", err)
		}
		if _, err := rw.Writer().Extend(ctx, rd, sxTTL); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Writer().Extend(reader's lock) = %v; want ErrNotHeld", err)
		}
		if held, _ := rw.Reader().IsLocked(ctx, "a"); !held {
			t.Errorf("reader released by a cross-side call; want it still held")
		}
		if held, _ := rw.Writer().IsLocked(ctx, "b"); !held {
			t.Errorf("writer released by a cross-side call; want it still held")
		}
	})
}

func TestSpecRWReaderLimitDerived32(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, sxPlainStore{memory.New()}, nil))
		for i := range 32 {
			if _, err := rw.Reader().TryLock(ctx, "r", sxTTL); err != nil {
				t.Fatalf("Reader().TryLock #%d (plain locks) = %v; want nil", i+1, err)
			}
		}
		if _, err := rw.Reader().TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Reader().TryLock #33 (plain locks, 32 readers) = %v; want ErrNotAcquired", err)
		}
	})
}

func TestSpecRWReaderNativeBeyond32(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, memory.New(), nil))
		for i := range 40 {
			if _, err := rw.Reader().TryLock(ctx, "r", sxTTL); err != nil {
				t.Fatalf("Reader().TryLock #%d (Permitter, 65536 readers) = %v; want nil", i+1, err)
			}
		}
	})
}

func TestSpecRWLockerShutdown(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		locker := mustSingle(t, store, nil)
		rw := sxRW(t, locker)
		if _, err := rw.Reader().TryLock(ctx, "r", time.Hour); err != nil {
			t.Fatalf("Reader().TryLock = %v", err)
		}
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := rw.Writer().Lock(waitCtx, "r", time.Hour)
			done <- err
		}()
		synctest.Wait()
		if err := locker.Shutdown(ctx); err != nil {
			t.Fatalf("locker.Shutdown = %v", err)
		}
		if err := <-done; !errors.Is(err, lock.ErrClosed) || waitCtx.Err() != nil {
			t.Fatalf("waiting Writer().Lock during locker.Shutdown = %v (ctx %v); want ErrClosed at once", err, waitCtx.Err())
		}
		if _, err := rw.Reader().TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrClosed) {
			t.Fatalf("Reader().TryLock after locker.Shutdown = %v; want ErrClosed", err)
		}
		observer := sxRW(t, mustSingle(t, store, nil))
		if held, err := observer.Reader().IsLocked(ctx, "r"); err != nil || held {
			t.Fatalf("Reader().IsLocked after locker.Shutdown = %v, %v; want false (released)", held, err)
		}
		if held, err := observer.Writer().IsLocked(ctx, "r"); err != nil || held {
			t.Fatalf("Writer().IsLocked after locker.Shutdown = %v, %v; want false", held, err)
		}
	})
}

func TestSpecRWOverMultiLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ml, _ := sxMulti(t, 3)
		rw := sxRW(t, ml)
		r1, err := rw.Reader().TryLock(ctx, "r", sxTTL)
		if err != nil {
			t.Fatalf("Redlock Reader().TryLock = %v", err)
		}
		if _, err := rw.Reader().TryLock(ctx, "r", sxTTL); err != nil {
			t.Fatalf("Redlock second Reader().TryLock = %v; want nil", err)
		}
		if _, err := rw.Writer().TryLock(ctx, "r", sxTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Redlock Writer().TryLock with readers in = %v; want ErrNotAcquired", err)
		}
		_ = r1
	})
}

// ---------------------------------------------------------------- sharper probes

func TestSpecSemExtendKeepsPermitDespiteOtherLimitMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		locker := mustSingle(t, sxPlainStore{memory.New()}, nil)
		sem2, sem3 := sxSem(t, locker, 2), sxSem(t, locker, 3)
		long, err := sem2.TryLock(ctx, "r", time.Hour)
		if err != nil {
			t.Fatalf("TryLock(1h) = %v", err)
		}
		short, err := sem2.TryLock(ctx, "r", time.Minute) // the marker now lives one minute
		if err != nil {
			t.Fatalf("TryLock(1m) = %v", err)
		}
		_ = short
		time.Sleep(2 * time.Minute) // marker gone; the 1h permit outlives it (documented blind spot)
		if _, err := sem3.TryLock(ctx, "r", time.Minute); err != nil {
			t.Fatalf("sem(3).TryLock once sem(2)'s marker expired = %v; want nil (documented: not detected)", err)
		}
		// sem(3)'s marker is held now: sem(2)'s Extend keeps its permit and reports nothing.
		if _, err := sem2.Extend(ctx, long, time.Hour); err != nil {
			t.Fatalf("sem(2).Extend(permit) finding another limit's marker = %v; want nil (keeps the permit, reports nothing)", err)
		}
	})
}

func TestSpecSemMismatchWhenEverySlotHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		locker := mustSingle(t, sxPlainStore{memory.New()}, nil)
		sem2, sem1 := sxSem(t, locker, 2), sxSem(t, locker, 1)
		for range 2 {
			if _, err := sem2.TryLock(ctx, "r", specTTLx); err != nil {
				t.Fatalf("TryLock = %v", err)
			}
		}
		// Every slot sem(1) would try is held: it must check the marker and be told.
		if _, err := sem1.TryLock(ctx, "r", specTTLx); !errors.Is(err, lock.ErrLimitMismatch) {
			t.Fatalf("sem(1).TryLock with every slot held under limit 2 = %v; want ErrLimitMismatch", err)
		}
	})
}

const specTTLx = time.Minute

func TestSpecSemRetryAttemptsBounded(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 1)
		// The holder outlasts the waits: each lasts at most the TTL asked for (1m).
		if _, err := sem.TryLock(ctx, "r", 24*time.Hour); err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		_, err := sem.Lock(ctx, "r", time.Minute, lock.WithRetry(lock.Retry{Attempts: 3, Delay: 10 * time.Millisecond}))
		if !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("sem.Lock(full, 3 attempts) = %v; want ErrNotAcquired", err)
		}
	})
}

func TestSpecSemLockContextEndNotContention(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		sem := sxSem(t, mustSingle(t, store, nil), 1)
		if _, err := sem.TryLock(t.Context(), "r", time.Hour); err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err := sem.Lock(ctx, "r", time.Hour)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("sem.Lock(full) until its deadline = %v; want DeadlineExceeded, not ErrNotAcquired", err)
		}
	})
}

func TestSpecSemShutdownReleasesOnlyItsOwn(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		locker := mustSingle(t, store, nil)
		a, b := sxSem(t, locker, 3), sxSem(t, locker, 3)
		if _, err := a.TryLock(ctx, "r", specTTLx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.TryLock(ctx, "r", specTTLx); err != nil {
			t.Fatal(err)
		}
		if err := a.Shutdown(ctx); err != nil {
			t.Fatalf("a.Shutdown = %v", err)
		}
		if n, _ := b.Permits(ctx, "r"); n != 1 {
			t.Fatalf("Permits after a.Shutdown = %d; want 1 (b's permit, not a's, stays)", n)
		}
		if _, err := b.TryLock(ctx, "r", specTTLx); err != nil {
			t.Fatalf("b.TryLock after a.Shutdown = %v; want nil (b still in service)", err)
		}
	})
}

func TestSpecSemUnlockAllOnlyItsOwn(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		locker := mustSingle(t, store, nil)
		a, b := sxSem(t, locker, 3), sxSem(t, locker, 3)
		_, _ = a.TryLock(ctx, "r", specTTLx)
		_, _ = b.TryLock(ctx, "r", specTTLx)
		if err := a.UnlockAll(ctx); err != nil {
			t.Fatalf("a.UnlockAll = %v", err)
		}
		if n, _ := b.Permits(ctx, "r"); n != 1 {
			t.Fatalf("Permits after a.UnlockAll = %d; want 1 (b's permit stays)", n)
		}
	})
}

func TestSpecSemOneWaiterPerRelease(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 1)
		held, _ := sem.TryLock(ctx, "r", time.Hour)
		got := make(chan lock.Lock, 2)
		for range 2 {
			go func() {
				l, err := sem.Lock(ctx, "r", time.Hour)
				if err != nil {
					t.Errorf("waiting Lock = %v", err)
				}
				got <- l
			}()
		}
		synctest.Wait()
		_ = sem.Unlock(ctx, held)
		first := <-got
		synctest.Wait()
		select {
		case <-got:
			t.Fatalf("two waiters got the one permit after a single release; want at most limit holders")
		default:
		}
		_ = sem.Unlock(ctx, first)
		<-got
	})
}

func TestSpecSemWaiterGetsExpiredPermit(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 1)
		start := time.Now()
		if _, err := sem.TryLock(ctx, "r", specTTLx); err != nil {
			t.Fatal(err)
		}
		if _, err := sem.Lock(ctx, "r", time.Hour); err != nil {
			t.Fatalf("Lock waiting for an expiring permit = %v; want nil", err)
		}
		if waited := time.Since(start); waited < specTTLx {
			t.Fatalf("permit granted %v after the holder's (fake clock); want not before its TTL %v", waited, specTTLx)
		}
	})
}

func TestSpecSemPermitTokenCarriesHolder(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		sem := sxSem(t, mustSingle(t, store, &lock.Options{Holder: "host:9"}), 3)
		p, err := sem.TryLock(t.Context(), "r", specTTLx)
		if err != nil {
			t.Fatal(err)
		}
		if h := lock.HolderOf(p.Token); h != "host:9" {
			t.Fatalf("HolderOf(permit.Token %q) = %q; want host:9 (tokens of a locker with Options.Holder end in ~holder)", p.Token, h)
		}
	})
}

func TestSpecRWTokensCarryHolder(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, store, &lock.Options{Holder: "host:9"}))
		rd, err := rw.Reader().TryLock(ctx, "a", specTTLx)
		if err != nil {
			t.Fatal(err)
		}
		wr, err := rw.Writer().TryLock(ctx, "b", specTTLx)
		if err != nil {
			t.Fatal(err)
		}
		if h := lock.HolderOf(rd.Token); h != "host:9" {
			t.Errorf("HolderOf(reader token %q) = %q; want host:9", rd.Token, h)
		}
		if h := lock.HolderOf(wr.Token); h != "host:9" {
			t.Errorf("HolderOf(writer token %q) = %q; want host:9", wr.Token, h)
		}
	})
}

// sxValidating refuses names containing '~', as a store that cannot hold them would.
type sxValidating struct{ sxPlainStore }

func (sxValidating) ValidateResource(r string) error {
	if strings.Contains(r, "~") {
		return errors.Join(lock.ErrInvalid, errors.New("no ~ in names"))
	}
	return nil
}

func TestSpecSemDerivedNamesValidatedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		sem := sxSem(t, mustSingle(t, sxValidating{sxPlainStore{m}}, nil), 2)
		if _, err := sem.TryLock(t.Context(), "r", specTTLx); !errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("sem.TryLock where the store refuses the derived names = %v; want ErrInvalid", err)
		}
		if got := m.Resources(); len(got) != 0 {
			t.Fatalf("locks held after a refused derived name = %v; want none (checked before anything is sent)", got)
		}
	})
}

func TestSpecSemConcurrentHoldersBounded(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 3)
		var mu sync.Mutex
		inside, most := 0, 0
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := lock.Run(ctx, sem, "r", specTTLx, func(ctx context.Context, l lock.Lock) error {
					mu.Lock()
					inside++
					most = max(most, inside)
					mu.Unlock()
					time.Sleep(time.Second)
					mu.Lock()
					inside--
					mu.Unlock()
					return nil
				})
				if err != nil {
					t.Errorf("Run = %v", err)
				}
			}()
		}
		wg.Wait()
		if most != 3 {
			t.Fatalf("most holders inside at once = %d; want 3 (the limit, reached)", most)
		}
	})
}

func TestSpecRWConcurrentExclusion(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, store, nil))
		var mu sync.Mutex
		readers, writers, mostReaders := 0, 0, 0
		var bad []string
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				writer := i%4 == 0
				side := rw.Reader()
				if writer {
					side = rw.Writer()
				}
				err := lock.Run(ctx, side, "r", specTTLx, func(ctx context.Context, l lock.Lock) error {
					mu.Lock()
					if writer {
						writers++
					} else {
						readers++
						mostReaders = max(mostReaders, readers)
					}
					if writers > 1 || (writers == 1 && readers > 0) {
						bad = append(bad, "overlap")
					}
					mu.Unlock()
					time.Sleep(time.Second)
					mu.Lock()
					if writer {
						writers--
					} else {
						readers--
					}
					mu.Unlock()
					return nil
				})
				if err != nil {
					t.Errorf("Run = %v", err)
				}
			}()
		}
		wg.Wait()
		if len(bad) > 0 {
			t.Fatalf("a writer was inside with another writer or a reader %d times; want never", len(bad))
		}
		if mostReaders < 2 {
			t.Fatalf("most readers inside at once = %d; want readers to share", mostReaders)
		}
	})
}

func TestSpecRWWriterIntentOutlivesLongWait(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, store, nil))
		rd, err := rw.Reader().TryLock(ctx, "r", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan lock.Lock, 1)
		go func() {
			w, err := rw.Writer().Lock(ctx, "r", time.Minute)
			if err != nil {
				t.Errorf("Writer().Lock = %v", err)
			}
			done <- w
		}()
		time.Sleep(10 * time.Minute) // ten of the writer's TTLs
		if held, _ := rw.Writer().IsLocked(ctx, "r"); !held {
			t.Fatalf("Writer().IsLocked after a wait of 10 TTLs = false; want true (intent renewed)")
		}
		if _, err := rw.Reader().TryLock(ctx, "r", time.Hour); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("new Reader().TryLock after the writer waited 10 TTLs = %v; want ErrNotAcquired", err)
		}
		_ = rw.Reader().Unlock(ctx, rd)
		w := <-done
		if !w.Valid() {
			t.Fatalf("writer's lock after a long wait: Valid() = false (ValidUntil %v, now %v); want valid", w.ValidUntil, time.Now())
		}
		time.Sleep(w.Remaining() - time.Millisecond)
		if _, err := rw.Reader().TryLock(ctx, "r", time.Hour); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Reader().TryLock just before the writer's ValidUntil = %v; want ErrNotAcquired", err)
		}
	})
}

func TestSpecRWExtendBothSides(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, store, nil))
		rd, _ := rw.Reader().TryLock(ctx, "a", time.Minute)
		wr, _ := rw.Writer().TryLock(ctx, "b", time.Minute)
		time.Sleep(30 * time.Second)
		if _, err := rw.Reader().Extend(ctx, rd, time.Minute); err != nil {
			t.Fatalf("Reader().Extend = %v; want nil", err)
		}
		if _, err := rw.Writer().Extend(ctx, wr, time.Minute); err != nil {
			t.Fatalf("Writer().Extend = %v; want nil", err)
		}
		time.Sleep(45 * time.Second) // past the first TTL
		if _, err := rw.Writer().TryLock(ctx, "a", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("Writer().TryLock(a) with the extended reader in = %v; want ErrNotAcquired", err)
		}
		if _, err := rw.Reader().TryLock(ctx, "b", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("Reader().TryLock(b) with the extended writer in = %v; want ErrNotAcquired", err)
		}
	})
}

func TestSpecSemErrorsNameResourceAndOp(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		sem := sxSem(t, mustSingle(t, store, nil), 1)
		_, _ = sem.TryLock(ctx, "r", specTTLx)
		_, err := sem.TryLock(ctx, "r", specTTLx)
		var le *lock.Error
		if !errors.As(err, &le) || le.Op != "trylock" || le.Resource != "r" {
			t.Fatalf("sem.TryLock(full) error = %#v; want *lock.Error{Op: \"trylock\", Resource: \"r\"}", err)
		}
	})
}

func TestSpecSemPermitsStoreFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		sem := sxSem(t, mustSingle(t, m, nil), 2)
		m.Inject(memory.Fault{Ops: memory.OpExists, Err: errors.New("connection reset")})
		_, err := sem.Permits(t.Context(), "r")
		var le *lock.Error
		if !errors.Is(err, lock.ErrUnavailable) || !errors.As(err, &le) || le.Op != "permits" || le.Resource != "r" {
			t.Fatalf("Permits with a failing store = %v; want ErrUnavailable as *lock.Error{Op: \"permits\", Resource: \"r\"}", err)
		}
	})
}

func TestSpecRWLocksNameResource(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		rw := sxRW(t, mustSingle(t, store, nil))
		rd, _ := rw.Reader().TryLock(ctx, "a", specTTLx)
		wr, _ := rw.Writer().TryLock(ctx, "b", specTTLx)
		if rd.Resource != "a" || wr.Resource != "b" {
			t.Fatalf("reader, writer Lock.Resource = %q, %q; want the resources as given, \"a\", \"b\"", rd.Resource, wr.Resource)
		}
		_, err := rw.Reader().TryLock(ctx, "b", specTTLx)
		var le *lock.Error
		if !errors.As(err, &le) || le.Resource != "b" || !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Reader().TryLock(b) with a writer in = %#v; want ErrNotAcquired naming resource \"b\"", err)
		}
	})
}

func TestSpecSemFromContextInRun(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		sem := sxSem(t, mustSingle(t, store, nil), 2)
		err := lock.Run(t.Context(), sem, "r", specTTLx, func(ctx context.Context, l lock.Lock) error {
			got, ok := lock.FromContext(ctx)
			if !ok || got.Token != l.Token || got.Resource != "r" || !got.Valid() {
				t.Errorf("FromContext in Run(sem) = %+v, %v; want the permit %+v, valid", got, ok, l)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}

func TestSpecRWLockerShutdownEndsWaitingReader(t *testing.T) {
	sxForBuilds(t, func(t *testing.T, m *memory.Store, store lock.Store) {
		ctx := t.Context()
		locker := mustSingle(t, store, nil)
		rw := sxRW(t, locker)
		if _, err := rw.Writer().TryLock(ctx, "r", time.Hour); err != nil {
			t.Fatal(err)
		}
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := rw.Reader().Lock(waitCtx, "r", time.Hour)
			done <- err
		}()
		synctest.Wait()
		if err := locker.Shutdown(ctx); err != nil {
			t.Fatalf("locker.Shutdown = %v", err)
		}
		if err := <-done; !errors.Is(err, lock.ErrClosed) || waitCtx.Err() != nil {
			t.Fatalf("waiting Reader().Lock during locker.Shutdown = %v (ctx %v); want ErrClosed at once", err, waitCtx.Err())
		}
		observer := sxRW(t, mustSingle(t, store, nil))
		if held, _ := observer.Writer().IsLocked(ctx, "r"); held {
			t.Fatalf("writer still held after locker.Shutdown; want released")
		}
	})
}

// sxForeign is a Locker of another package (as the semaphore sees it): it
// delegates every call to a SingleLocker.
type sxForeign struct{ in *lock.SingleLocker }

func (f sxForeign) Lock(ctx context.Context, r string, ttl time.Duration, o ...lock.LockOption) (lock.Lock, error) {
	return f.in.Lock(ctx, r, ttl, o...)
}
func (f sxForeign) TryLock(ctx context.Context, r string, ttl time.Duration) (lock.Lock, error) {
	return f.in.TryLock(ctx, r, ttl)
}
func (f sxForeign) IsLocked(ctx context.Context, r string) (bool, error) {
	return f.in.IsLocked(ctx, r)
}
func (f sxForeign) Unlock(ctx context.Context, l lock.Lock) error { return f.in.Unlock(ctx, l) }
func (f sxForeign) Extend(ctx context.Context, l lock.Lock, ttl time.Duration) (lock.Lock, error) {
	return f.in.Extend(ctx, l, ttl)
}
func (f sxForeign) UnlockAll(ctx context.Context) error { return f.in.UnlockAll(ctx) }
func (f sxForeign) Shutdown(ctx context.Context) error  { return f.in.Shutdown(ctx) }

func TestSpecSemShutdownOfAnyLockerEndsWaiter(t *testing.T) {
	builds := []struct {
		name string
		make func(t *testing.T) lock.Locker
	}{
		{"native", func(t *testing.T) lock.Locker { return mustSingle(t, memory.New(), nil) }},
		{"derived", func(t *testing.T) lock.Locker { return mustSingle(t, sxPlainStore{memory.New()}, nil) }},
		{"multi", func(t *testing.T) lock.Locker { ml, _ := sxMulti(t, 3); return ml }},
		{"foreign", func(t *testing.T) lock.Locker { return sxForeign{mustSingle(t, memory.New(), nil)} }},
	}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				locker := b.make(t)
				sem := sxSem(t, locker, 1)
				if _, err := sem.TryLock(ctx, "r", time.Hour); err != nil {
					t.Fatal(err)
				}
				type res struct {
					err error
					at  time.Time
				}
				done := make(chan res, 1)
				go func() {
					_, err := sem.Lock(ctx, "r", time.Hour)
					done <- res{err, time.Now()}
				}()
				synctest.Wait()
				shutAt := time.Now()
				if err := locker.Shutdown(ctx); err != nil {
					t.Fatalf("locker.Shutdown = %v", err)
				}
				r := <-done
				if !errors.Is(r.err, lock.ErrClosed) {
					t.Fatalf("waiting sem.Lock during locker.Shutdown = %v; want ErrClosed", r.err)
				}
				// Over a Locker of another package, whose shutdown the
				// semaphore cannot watch, the waiter ends at its next
				// attempt instead: ErrClosed all the same.
				if d := r.at.Sub(shutAt); d != 0 && b.name != "foreign" {
					t.Errorf("waiting sem.Lock ended %v (fake clock) after locker.Shutdown; want at once", d)
				}
				if held, err := sem.IsLocked(ctx, "r"); err == nil && held {
					t.Errorf("sem.IsLocked after locker.Shutdown = true; want the permits released")
				}
			})
		})
	}
}
