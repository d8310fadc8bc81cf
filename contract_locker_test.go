package lock_test

// Black-box review of the Locker contract on the memory store: contexts,
// errors, validity, Extend/Unlock, Shutdown and UnlockAll.

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// rvRecorder is a hook that keeps every event.
type rvRecorder struct {
	mu sync.Mutex
	ev []lock.Event
}

func (r *rvRecorder) Observe(_ context.Context, e lock.Event) {
	r.mu.Lock()
	r.ev = append(r.ev, e)
	r.mu.Unlock()
}

func (r *rvRecorder) count(k lock.EventKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.ev {
		if e.Kind == k {
			n++
		}
	}
	return n
}

func (r *rvRecorder) kinds() []lock.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []lock.EventKind
	for _, e := range r.ev {
		ks = append(ks, e.Kind)
	}
	return ks
}

// rvLockers runs test on a SingleLocker over one memory store and on a
// MultiLocker over three.
func rvLockers(t *testing.T, o *lock.Options, test func(t *testing.T, l lock.Locker, stores []*memory.Store)) {
	t.Run("single", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := memory.New()
			test(t, mustSingle(t, m, o), []*memory.Store{m})
		})
	})
	t.Run("multi", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ms, ls := memStores(3)
			test(t, mustMulti(t, ls, o), ms)
		})
	})
}

func TestContractContextNotContention(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		held, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r)", err)

		// A waiter whose deadline passes gets DeadlineExceeded.
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = l.Lock(dctx, "r", time.Second)
		cancel()
		wantIs(t, "Lock(r) until deadline", err, context.DeadlineExceeded)
		if errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("Lock(r) until deadline = %v; must not match ErrNotAcquired", err)
		}

		// A canceled context, before anything.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		for name, f := range map[string]func() error{
			"Lock(free)":    func() error { _, err := l.Lock(cctx, "free", time.Second); return err },
			"TryLock(free)": func() error { _, err := l.TryLock(cctx, "free", time.Second); return err },
			"TryLock(r)":    func() error { _, err := l.TryLock(cctx, "r", time.Second); return err },
			"Extend(held)":  func() error { _, err := l.Extend(cctx, held, time.Second); return err },
			"IsLocked(r)":   func() error { _, err := l.IsLocked(cctx, "r"); return err },
		} {
			err := f()
			wantIs(t, name+" with a canceled context", err, context.Canceled)
			if errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("%s with a canceled context = %v; want no lock outcome", name, err)
			}
		}
		// Unlock with a canceled context: either it released (nil) or it
		// reports the context, and then the lock is still held.
		err = l.Unlock(cctx, held)
		if err != nil {
			wantIs(t, "Unlock(held) with a canceled context", err, context.Canceled)
			wantNil(t, "Unlock(held)", l.Unlock(ctx, held))
		}
		// A waiter canceled while it waits.
		held, err = l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r)", err)
		cctx, cancel = context.WithCancel(ctx)
		go func() { time.Sleep(100 * time.Millisecond); cancel() }()
		_, err = l.Lock(cctx, "r", time.Second)
		wantIs(t, "Lock(r) canceled while waiting", err, context.Canceled)
		wantNil(t, "Unlock(held)", l.Unlock(ctx, held))
		time.Sleep(2 * time.Second) // background cleanups, if any
		noResidue(t, ms...)
	})
}

func TestContractRetryAttemptsCounted(t *testing.T) {
	for _, attempts := range []int{0, 1, 3} {
		rec := &rvRecorder{}
		rvLockers(t, &lock.Options{Hook: rec}, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
			ctx := context.Background()
			rec.mu.Lock()
			rec.ev = nil
			rec.mu.Unlock()
			other := mustSingle(t, ms[0], nil)
			if len(ms) > 1 {
				ls := make([]lock.Store, len(ms))
				for i, m := range ms {
					ls[i] = m
				}
				other = nil
				om := mustMulti(t, ls, nil)
				_, err := om.TryLock(ctx, "r", time.Minute)
				wantNil(t, "other TryLock", err)
			} else {
				_, err := other.TryLock(ctx, "r", time.Minute)
				wantNil(t, "other TryLock", err)
			}
			_, err := l.Lock(ctx, "r", time.Second, lock.WithRetry(lock.Retry{Attempts: attempts, Delay: 10 * time.Millisecond}))
			wantIs(t, "Lock(held r)", err, lock.ErrNotAcquired)
			want := max(attempts, 1)
			if n := rec.count(lock.EventAttempt); n != want {
				t.Errorf("Retry{Attempts: %d}: %d attempts; want %d", attempts, n, want)
			}
			if n := rec.count(lock.EventNotAcquired); n != 1 {
				t.Errorf("%d EventNotAcquired; want 1", n)
			}
		})
	}
}

func TestContractStoreFailuresAreUnavailable(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		for _, m := range ms {
			m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset, AfterApply: true, Times: memory.Always})
		}
		_, err := l.TryLock(ctx, "r", time.Second)
		wantIs(t, "TryLock(r) with lost replies", err, lock.ErrUnavailable)
		wantIs(t, "TryLock(r) with lost replies", err, errConnReset)
		if errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("TryLock(r) = %v; an unknown outcome must not match ErrNotAcquired", err)
		}
		for _, m := range ms {
			m.ClearFaults()
		}
		time.Sleep(2 * time.Second)
		noResidue(t, ms...)

		held, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r)", err)
		for _, m := range ms {
			m.Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, Times: memory.Always})
		}
		err = l.Unlock(ctx, held)
		wantIs(t, "Unlock with failing stores", err, lock.ErrUnavailable)
		if errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Unlock = %v; a failure must not match ErrNotHeld", err)
		}
		for _, m := range ms {
			m.Inject(memory.Fault{Ops: memory.OpExtend, Err: errConnReset, Times: memory.Always})
		}
		_, err = l.Extend(ctx, held, time.Second)
		wantIs(t, "Extend with failing stores", err, lock.ErrUnavailable)
		if errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Extend = %v; a failure must not match ErrNotHeld", err)
		}
		for _, m := range ms {
			m.ClearFaults()
		}
		wantNil(t, "Unlock after faults cleared", l.Unlock(ctx, held))
		time.Sleep(2 * time.Second)
		noResidue(t, ms...)
	})
}

func TestContractInFlightAcquireCleanedUp(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		for _, m := range ms {
			m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 200 * time.Millisecond, InFlight: true})
		}
		dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		_, err := l.TryLock(dctx, "r", time.Minute)
		cancel()
		if errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("TryLock(r) whose request landed late = %v; must not match ErrNotAcquired", err)
		}
		if err == nil {
			t.Fatalf("TryLock(r) = nil; want an error")
		}
		time.Sleep(5 * time.Second)
		noResidue(t, ms...)
	})
}

func TestContractExtendUnlockSemantics(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		a, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r)", err)
		time.Sleep(500 * time.Millisecond)
		b, err := l.Extend(ctx, a, 2*time.Second)
		wantNil(t, "Extend(a, 2s)", err)
		if !b.ValidUntil.After(a.ValidUntil) {
			t.Errorf("Extend: ValidUntil %v; want after %v", b.ValidUntil, a.ValidUntil)
		}
		if b.Token != a.Token || b.Resource != a.Resource || b.Fence != a.Fence {
			t.Errorf("Extend changed the lock: %+v -> %+v", a, b)
		}
		// Held beyond the first TTL.
		time.Sleep(time.Second)
		if ok, err := l.IsLocked(ctx, "r"); !ok || err != nil {
			t.Errorf("IsLocked(r) after the first TTL but within the extension = %v, %v; want true", ok, err)
		}
		// Unlock with the pre-extension value works (same token).
		wantNil(t, "Unlock(a)", l.Unlock(ctx, a))
		wantIs(t, "Unlock(a) twice", l.Unlock(ctx, a), lock.ErrNotHeld)
		_, err = l.Extend(ctx, a, time.Second)
		wantIs(t, "Extend(released)", err, lock.ErrNotHeld)
		noResidue(t, ms...)

		// Expiry: Extend and Unlock report ErrNotHeld and never re-create.
		c, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r)", err)
		time.Sleep(1100 * time.Millisecond)
		if c.Valid() {
			t.Errorf("lock valid after its TTL")
		}
		_, err = l.Extend(ctx, c, time.Second)
		wantIs(t, "Extend(expired)", err, lock.ErrNotHeld)
		noResidue(t, ms...)
		wantIs(t, "Unlock(expired)", l.Unlock(ctx, c), lock.ErrNotHeld)

		// Taken over: the old holder cannot release or extend the new one.
		d, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r)", err)
		for _, m := range ms {
			m.Expire("r")
		}
		e, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r) after expiry", err)
		wantIs(t, "Unlock(old holder)", l.Unlock(ctx, d), lock.ErrNotHeld)
		_, err = l.Extend(ctx, d, time.Second)
		wantIs(t, "Extend(old holder)", err, lock.ErrNotHeld)
		if ok, _ := l.IsLocked(ctx, "r"); !ok {
			t.Errorf("old holder's Unlock freed the new holder's lock")
		}
		if e.Fence != 0 && e.Fence <= d.Fence {
			t.Errorf("fence %d after %d; want increasing", e.Fence, d.Fence)
		}
		wantNil(t, "Unlock(new holder)", l.Unlock(ctx, e))

		// Not re-entrant.
		f, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r)", err)
		_, err = l.TryLock(ctx, "r", time.Second)
		wantIs(t, "TryLock(r) by the same locker", err, lock.ErrNotAcquired)
		wantNil(t, "Unlock(f)", l.Unlock(ctx, f))
		noResidue(t, ms...)
	})
}

// The hook's EventExtended names the lock the extension was for, also
// when it failed, so that a hook can tell which lock it lost.
func TestContractFailedExtendEventNamesTheLock(t *testing.T) {
	rec := &rvRecorder{}
	rvLockers(t, &lock.Options{Hook: rec}, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		held, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r)", err)
		for _, m := range ms {
			m.Expire("r")
		}
		_, err = l.Extend(ctx, held, time.Second)
		wantIs(t, "Extend(expired)", err, lock.ErrNotHeld)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		e := rec.ev[len(rec.ev)-1]
		if e.Kind != lock.EventExtended || e.Lock.Token != held.Token || e.Lock.Resource != "r" {
			t.Errorf("last event %v with Lock %+v; want EventExtended with the lock %+v", e.Kind, e.Lock, held)
		}
		rec.ev = nil
	})
}

// UnlockAll releases the locks its locker acquired: a lock that another
// locker over the same stores extended stays the acquirer's, on every
// kind of store (in the process or not) and for both lockers.
func TestContractUnlockAllLeavesLocksExtendedForOthers(t *testing.T) {
	cases := map[string]func(t *testing.T) (a, b lock.Locker){
		"single in-process": func(t *testing.T) (lock.Locker, lock.Locker) {
			m := memory.New()
			return mustSingle(t, m, nil), mustSingle(t, m, nil)
		},
		"single": func(t *testing.T) (lock.Locker, lock.Locker) {
			c := newCounting("c")
			return mustSingle(t, c, nil), mustSingle(t, c, nil)
		},
		"multi": func(t *testing.T) (lock.Locker, lock.Locker) {
			_, ls := memStores(3)
			return mustMulti(t, ls, nil), mustMulti(t, ls, nil)
		},
	}
	for name, lockers := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				a, b := lockers(t)
				held, err := a.TryLock(ctx, "r", time.Minute)
				wantNil(t, "a.TryLock(r)", err)
				_, err = b.Extend(ctx, held, time.Minute)
				wantNil(t, "b.Extend(a's lock)", err)
				wantNil(t, "b.UnlockAll()", b.UnlockAll(ctx))
				if ok, err := a.IsLocked(ctx, "r"); !ok || err != nil {
					t.Errorf("IsLocked(r) after b.UnlockAll() = %v, %v; want true, nil: b only extended a's lock", ok, err)
				}
				wantNil(t, "a.UnlockAll()", a.UnlockAll(ctx))
				if ok, err := a.IsLocked(ctx, "r"); ok || err != nil {
					t.Errorf("IsLocked(r) after a.UnlockAll() = %v, %v; want false, nil", ok, err)
				}
			})
		})
	}
}

func TestContractLockJSONReleasedElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		a := mustSingle(t, m, nil)
		b := mustSingle(t, m, nil)
		l, err := a.TryLock(ctx, "r", time.Minute)
		wantNil(t, "TryLock", err)
		data, err := json.Marshal(l)
		wantNil(t, "json.Marshal", err)
		var back lock.Lock
		wantNil(t, "json.Unmarshal", json.Unmarshal(data, &back))
		if back.Resource != l.Resource || back.Token != l.Token || back.Fence != l.Fence || !back.ValidUntil.Equal(l.ValidUntil) {
			t.Errorf("JSON round trip: %+v -> %+v", l, back)
		}
		back2, err := b.Extend(ctx, back, time.Minute)
		wantNil(t, "other locker's Extend", err)
		wantNil(t, "other locker's Unlock", b.Unlock(ctx, back2))
		noResidue(t, m)
		// The acquiring locker forgets it: Shutdown has nothing to release.
		wantNil(t, "Shutdown", a.Shutdown(ctx))
	})
}

func TestContractValidityAccounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		start := time.Now()
		l, err := mustSingle(t, m, nil).TryLock(ctx, "r", 10*time.Second)
		wantNil(t, "TryLock", err)
		// ttl - (ttl×0.01 + 2ms), with no time elapsed on a fake clock.
		want := start.Add(10*time.Second - 100*time.Millisecond - 2*time.Millisecond)
		if !l.ValidUntil.Equal(want) {
			t.Errorf("ValidUntil = start+%v; want start+%v", l.ValidUntil.Sub(start), want.Sub(start))
		}
		if r := l.Remaining(); r != want.Sub(start) {
			t.Errorf("Remaining() = %v; want %v", r, want.Sub(start))
		}
		c := coarse{memory.New(), time.Second}
		l, err = mustSingle(t, c, &lock.Options{DriftFactor: 0.1}).TryLock(ctx, "r", 10*time.Second)
		wantNil(t, "TryLock(coarse)", err)
		want = start.Add(10*time.Second - time.Second - 2*time.Millisecond - time.Second)
		if !l.ValidUntil.Equal(want) {
			t.Errorf("coarse ValidUntil = start+%v; want start+%v", l.ValidUntil.Sub(start), want.Sub(start))
		}
		// A TTL that leaves no validity is refused.
		_, err = mustSingle(t, c, nil).TryLock(ctx, "x", time.Second)
		wantIs(t, "TryLock(coarse, 1s)", err, lock.ErrInvalid)

		// Lock delay: the store keeps ttl+delay, the validity is the ttl's.
		d := memory.New()
		dl := mustSingle(t, d, &lock.Options{LockDelay: 5 * time.Second})
		l, err = dl.TryLock(ctx, "r", 10*time.Second)
		wantNil(t, "TryLock(lock delay)", err)
		want = start.Add(10*time.Second - 102*time.Millisecond)
		if !l.ValidUntil.Equal(want) {
			t.Errorf("lock delay: ValidUntil = start+%v; want start+%v", l.ValidUntil.Sub(start), want.Sub(start))
		}
		if ttl, ok, _ := d.TTL(ctx, "r"); !ok || ttl != 15*time.Second {
			t.Errorf("store TTL with LockDelay 5s = %v, %v; want 15s", ttl, ok)
		}
		time.Sleep(12 * time.Second)
		if _, err := dl.TryLock(ctx, "r", time.Second); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("TryLock within the lock delay = %v; want ErrNotAcquired", err)
		}
		time.Sleep(4 * time.Second)
		l2, err := dl.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock after the lock delay", err)
		wantNil(t, "Unlock", dl.Unlock(ctx, l2))
		if _, err := dl.TryLock(ctx, "r", time.Second); err != nil {
			t.Errorf("TryLock after Unlock with a lock delay = %v; want nil (Unlock frees at once)", err)
		}
		wantNil(t, "Shutdown", dl.Shutdown(ctx))
		noResidue(t, d)
	})
}

func TestContractShutdown(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		a, err := l.TryLock(ctx, "a", time.Minute)
		wantNil(t, "TryLock(a)", err)
		_, err = l.TryLock(ctx, "b", time.Minute)
		wantNil(t, "TryLock(b)", err)
		errc := make(chan error, 1)
		go func() {
			_, err := l.Lock(ctx, "a", time.Minute)
			errc <- err
		}()
		synctest.Wait()
		wantNil(t, "Shutdown", l.Shutdown(ctx))
		wantIs(t, "waiting Lock after Shutdown", <-errc, lock.ErrClosed)
		noResidue(t, ms...)
		_, err = l.TryLock(ctx, "c", time.Minute)
		wantIs(t, "TryLock after Shutdown", err, lock.ErrClosed)
		_, err = l.Lock(ctx, "c", time.Minute)
		wantIs(t, "Lock after Shutdown", err, lock.ErrClosed)
		_, err = l.Extend(ctx, a, time.Minute)
		wantIs(t, "Extend after Shutdown", err, lock.ErrClosed)
		// Unlock keeps working (the lock is gone: not held).
		wantIs(t, "Unlock after Shutdown", l.Unlock(ctx, a), lock.ErrNotHeld)
		if _, err := l.IsLocked(ctx, "a"); err != nil {
			t.Errorf("IsLocked after Shutdown = %v", err)
		}
		wantNil(t, "Shutdown twice", l.Shutdown(ctx))
		noResidue(t, ms...)
	})
}

func TestContractUnlockAll(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		_, err := l.TryLock(ctx, "a", time.Minute)
		wantNil(t, "TryLock(a)", err)
		_, err = l.TryLock(ctx, "b", time.Minute)
		wantNil(t, "TryLock(b)", err)
		c, err := l.TryLock(ctx, "c", time.Minute)
		wantNil(t, "TryLock(c)", err)
		wantNil(t, "Unlock(c)", l.Unlock(ctx, c))
		for _, m := range ms {
			m.Expire("b")
		}
		wantNil(t, "UnlockAll with one lock expired", l.UnlockAll(ctx))
		noResidue(t, ms...)
		// Still in service.
		d, err := l.TryLock(ctx, "d", time.Minute)
		wantNil(t, "TryLock after UnlockAll", err)
		wantNil(t, "Unlock(d)", l.Unlock(ctx, d))
		wantNil(t, "UnlockAll with nothing held", l.UnlockAll(ctx))
	})
}

func TestContractErrorMessage(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	l := mustSingle(t, m, nil)
	_, err := l.TryLock(ctx, "report", time.Minute)
	wantNil(t, "TryLock", err)
	_, err = l.TryLock(ctx, "report", time.Minute)
	if got, want := err.Error(), `trylock "report": not acquired: held by another owner`; got != want {
		t.Errorf("TryLock(held).Error() = %q; want %q (package doc)", got, want)
	}
	var le *lock.Error
	if !errors.As(err, &le) || le.Op != "trylock" || le.Resource != "report" {
		t.Errorf("errors.As(*Error) = %+v", le)
	}
	wantNil(t, "UnlockAll", l.UnlockAll(ctx))
}

func TestContractHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		l := mustSingle(t, m, &lock.Options{Holder: "host-1:42"})
		k, err := l.TryLock(ctx, "r", time.Minute)
		wantNil(t, "TryLock", err)
		if h := lock.HolderOf(k.Token); h != "host-1:42" {
			t.Errorf("HolderOf(token) = %q; want host-1:42", h)
		}
		if h, ok, err := l.Holder(ctx, "r"); h != "host-1:42" || !ok || err != nil {
			t.Errorf("Holder(r) = %q, %v, %v; want host-1:42, true, nil", h, ok, err)
		}
		wantNil(t, "Unlock", l.Unlock(ctx, k))
		if h, ok, err := l.Holder(ctx, "r"); h != "" || ok || err != nil {
			t.Errorf("Holder(free) = %q, %v, %v; want \"\", false, nil", h, ok, err)
		}
		anon := mustSingle(t, m, nil)
		k, err = anon.TryLock(ctx, "r", time.Minute)
		wantNil(t, "TryLock", err)
		if h, ok, err := l.Holder(ctx, "r"); h != "" || !ok || err != nil {
			t.Errorf("Holder(anonymous) = %q, %v, %v; want \"\", true, nil", h, ok, err)
		}
		if h := lock.HolderOf(k.Token); h != "" {
			t.Errorf("HolderOf(random token) = %q; want \"\"", h)
		}
		wantNil(t, "Unlock", anon.Unlock(ctx, k))
		b := mustSingle(t, basic{m}, nil)
		if _, _, err := b.Holder(ctx, "r"); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("Holder on a store without HolderReader = %v; want errors.ErrUnsupported", err)
		}
		for _, tok := range []struct{ tok, want string }{{"a~b~c", "c"}, {"abc", ""}, {"abc~", ""}, {"~x", "x"}} {
			if got := lock.HolderOf(tok.tok); got != tok.want {
				t.Errorf("HolderOf(%q) = %q; want %q", tok.tok, got, tok.want)
			}
		}
		// MultiLocker.Holder.
		ms, ls := memStores(3)
		ml := mustMulti(t, ls, &lock.Options{Holder: "h2"})
		k, err = ml.TryLock(ctx, "r", time.Minute)
		wantNil(t, "multi TryLock", err)
		if h, ok, err := ml.Holder(ctx, "r"); h != "h2" || !ok || err != nil {
			t.Errorf("multi Holder(r) = %q, %v, %v; want h2, true, nil", h, ok, err)
		}
		wantNil(t, "multi Unlock", ml.Unlock(ctx, k))
		if h, ok, err := ml.Holder(ctx, "r"); h != "" || ok || err != nil {
			t.Errorf("multi Holder(free) = %q, %v, %v; want \"\", false, nil", h, ok, err)
		}
		noResidue(t, ms...)
	})
}

func TestContractFencesAndNoFence(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := context.Background()
		var last uint64
		for i := range 5 {
			k, err := l.TryLock(ctx, "r", time.Minute)
			wantNil(t, "TryLock", err)
			if k.Fence <= last {
				t.Errorf("lock %d: fence %d after %d; want strictly increasing", i, k.Fence, last)
			}
			last = k.Fence
			if i%2 == 0 {
				wantNil(t, "Unlock", l.Unlock(ctx, k))
			} else {
				for _, m := range ms {
					m.Expire("r")
				}
			}
		}
	})
	rvLockers(t, &lock.Options{NoFence: true}, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		k, err := l.TryLock(context.Background(), "r", time.Minute)
		wantNil(t, "TryLock", err)
		if k.Fence != 0 {
			t.Errorf("NoFence: fence %d; want 0", k.Fence)
		}
		wantNil(t, "UnlockAll", l.UnlockAll(context.Background()))
	})
}

func TestContractExtendUnsupported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		l := mustSingle(t, basic{m}, nil)
		k, err := l.TryLock(ctx, "r", time.Minute)
		wantNil(t, "TryLock", err)
		_, err = l.Extend(ctx, k, time.Minute)
		wantIs(t, "Extend on a store without Extender", err, errors.ErrUnsupported)
		if errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Extend unsupported = %v; must not match ErrNotHeld", err)
		}
		wantNil(t, "Unlock", l.Unlock(ctx, k))
		noResidue(t, m)
	})
}

func TestContractValidityMultiAndExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ms, _ := memStores(3)
		ls := []lock.Store{ms[0], coarse{ms[1], time.Second}, ms[2]}
		m := mustMulti(t, ls, nil)
		start := time.Now()
		k, err := m.TryLock(ctx, "r", 10*time.Second)
		wantNil(t, "TryLock", err)
		want := start.Add(10*time.Second - 100*time.Millisecond - 2*time.Millisecond - time.Second)
		if !k.ValidUntil.Equal(want) {
			t.Errorf("multi ValidUntil = start+%v; want start+%v (largest granularity subtracted)", k.ValidUntil.Sub(start), want.Sub(start))
		}
		time.Sleep(3 * time.Second)
		now := time.Now()
		k, err = m.Extend(ctx, k, 20*time.Second)
		wantNil(t, "Extend", err)
		want = now.Add(20*time.Second - 200*time.Millisecond - 2*time.Millisecond - time.Second)
		if !k.ValidUntil.Equal(want) {
			t.Errorf("multi Extend ValidUntil = now+%v; want now+%v", k.ValidUntil.Sub(now), want.Sub(now))
		}
		wantNil(t, "Unlock", m.Unlock(ctx, k))

		s := mustSingle(t, ms[0], nil)
		k, err = s.TryLock(ctx, "r", 10*time.Second)
		wantNil(t, "TryLock", err)
		time.Sleep(3 * time.Second)
		now = time.Now()
		k, err = s.Extend(ctx, k, 20*time.Second)
		wantNil(t, "Extend", err)
		if want := now.Add(20*time.Second - 202*time.Millisecond); !k.ValidUntil.Equal(want) {
			t.Errorf("single Extend ValidUntil = now+%v; want now+%v", k.ValidUntil.Sub(now), want.Sub(now))
		}
		if d, _, _ := ms[0].TTL(ctx, "r"); d != 20*time.Second {
			t.Errorf("store TTL after Extend(20s) = %v", d)
		}
		wantNil(t, "Unlock", s.Unlock(ctx, k))
		noResidue(t, ms...)
	})
}
