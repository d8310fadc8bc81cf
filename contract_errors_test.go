package lock_test

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// wantError fails the test unless err is an *Error naming op and
// resource whose chain matches target.
func wantError(t *testing.T, call string, err error, op, resource string, target error) {
	t.Helper()
	var e *lock.Error
	switch {
	case !errors.As(err, &e):
		t.Errorf("%s = %v (%T); want a *lock.Error", call, err, err)
	case e.Op != op || e.Resource != resource:
		t.Errorf("%s = %v: Op %q, Resource %q; want Op %q, Resource %q", call, err, e.Op, e.Resource, op, resource)
	case !errors.Is(err, target):
		t.Errorf("%s = %v; want an error matching %v", call, err, target)
	}
}

// Every locker error is an *Error naming the call that failed and its
// resource (doc of Error.Op), UnlockAll's and Shutdown's included: the
// releases they make are theirs, and the releases' own errors, with the
// stores', stay in the chain.
func TestContractErrorsNameTheirCall(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := t.Context()
		held, err := l.TryLock(ctx, "a", time.Minute)
		wantNil(t, "TryLock(a)", err)
		failAlways(ms...)

		_, err = l.TryLock(ctx, "b", time.Minute)
		wantError(t, "TryLock(b) with failing stores", err, "trylock", "b", lock.ErrUnavailable)
		_, err = l.Lock(ctx, "b", time.Minute, lock.WithRetry(lock.Retry{Attempts: 2, Delay: time.Millisecond}))
		wantError(t, "Lock(b) with failing stores", err, "lock", "b", lock.ErrUnavailable)
		_, err = l.IsLocked(ctx, "b")
		wantError(t, "IsLocked(b) with failing stores", err, "islocked", "b", lock.ErrUnavailable)
		got, err := l.Extend(ctx, held, time.Minute)
		wantError(t, "Extend(a) with failing stores", err, "extend", "a", lock.ErrUnavailable)
		if !got.IsZero() {
			t.Errorf("Extend(a) with failing stores = %+v, %v; want the zero Lock with the error", got, err)
		}
		err = l.Unlock(ctx, held)
		wantError(t, "Unlock(a) with failing stores", err, "unlock", "a", lock.ErrUnavailable)

		err = l.UnlockAll(ctx)
		wantError(t, "UnlockAll() with failing stores", err, "unlockall", "", lock.ErrUnavailable)
		wantIs(t, "UnlockAll() with failing stores", err, errConnReset)
		// The release that failed is in the chain, naming its resource.
		var all, release *lock.Error
		if !errors.As(err, &all) || !errors.As(all.Err, &release) || release.Op != "unlock" || release.Resource != "a" {
			t.Errorf("UnlockAll() = %v; want the failed release of a in its chain", err)
		}

		err = l.Shutdown(ctx)
		wantError(t, "Shutdown() with failing stores", err, "shutdown", "", lock.ErrUnavailable)
		wantIs(t, "Shutdown() with failing stores", err, errConnReset)

		for _, m := range ms {
			m.ClearFaults()
		}
		_, err = l.TryLock(ctx, "b", time.Minute)
		wantError(t, "TryLock(b) after Shutdown", err, "trylock", "b", lock.ErrClosed)
		_, err = l.Lock(ctx, "b", time.Minute)
		wantError(t, "Lock(b) after Shutdown", err, "lock", "b", lock.ErrClosed)
		_, err = l.Extend(ctx, held, time.Minute)
		wantError(t, "Extend(a) after Shutdown", err, "extend", "a", lock.ErrClosed)
		wantNil(t, "UnlockAll() after Shutdown, the stores back", l.UnlockAll(ctx))
		wantNil(t, "Shutdown() again", l.Shutdown(ctx))
	})
}

// Error.Stores names the stores that did not succeed, in store order,
// with what each said: a MultiLocker every one (those that answered
// "held by another" too), a SingleLocker its store when it failed, not
// when it answered with a lock outcome (the error's cause says it all).
func TestContractErrorStores(t *testing.T) {
	// In a bubble: the MultiLocker's store timeouts run on its fake clock.
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		stores := func(err error) []lock.StoreError {
			var e *lock.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not a *lock.Error", err, err)
			}
			return e.Stores
		}

		m := memory.New(memory.WithName("m"))
		s := mustSingle(t, m, nil)
		_, err := s.TryLock(ctx, "r", time.Minute)
		wantNil(t, "TryLock(r)", err)
		_, err = s.TryLock(ctx, "r", time.Minute)
		wantIs(t, "TryLock(r) held", err, lock.ErrNotAcquired)
		if got := stores(err); len(got) != 0 {
			t.Errorf("SingleLocker TryLock(r) held: Stores = %v; want none", got)
		}
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})
		_, err = s.TryLock(ctx, "q", time.Minute)
		wantIs(t, "TryLock(q) with a failing store", err, lock.ErrUnavailable)
		if got := stores(err); len(got) != 1 || got[0].Index != 0 || got[0].Store != "m" || !errors.Is(got[0].Err, errConnReset) {
			t.Errorf("SingleLocker TryLock(q) with a failing store: Stores = %v; want [m: %v]", got, errConnReset)
		}

		// m0 held by another owner, m1 failing, m2 granting: the attempt is
		// decided by the last answer, and the outcome on m1 is unknown.
		ms, ls := memStores(3)
		ml := mustMulti(t, ls, nil)
		wantNil(t, "m0.Acquire(r, other)", ms[0].Acquire(ctx, "r", "other", time.Minute))
		ms[1].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})
		_, err = ml.TryLock(ctx, "r", time.Minute)
		wantIs(t, "MultiLocker TryLock(r) held on m0, m1 failing", err, lock.ErrUnavailable)
		wantIs(t, "MultiLocker TryLock(r) held on m0, m1 failing", err, errConnReset)
		if errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("MultiLocker TryLock(r) held on m0, m1 failing = %v; want no match for ErrNotAcquired: the outcome on m1 is unknown", err)
		}
		got := stores(err)
		if len(got) != 2 {
			t.Fatalf("MultiLocker TryLock(r) held on m0, m1 failing: Stores = %v; want m0 and m1, in store order", got)
		}
		for i, want := range []error{lock.ErrNotAcquired, errConnReset} {
			if got[i].Index != i || got[i].Store != ms[i].String() || !errors.Is(got[i].Err, want) {
				t.Errorf("Stores[%d] = %d %q %v; want %d %q %v", i, got[i].Index, got[i].Store, got[i].Err, i, ms[i], want)
			}
		}
		wantNil(t, "m0.Release(r, other)", ms[0].Release(ctx, "r", "other"))
		noResidue(t, ms...)
	})
}

// A store whose own error wraps lock.ErrClosed (a third-party store
// reusing the sentinel for its closed client, say) has failed, no more:
// the locker is not shut down, so the call reports ErrUnavailable with the
// store's error in the chain, and Lock retries it as it retries any
// failure.
func TestContractStoreErrClosedIsAFailure(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := t.Context()
		storeClosed := fmt.Errorf("store client closed: %w", lock.ErrClosed)
		for _, m := range ms {
			// TryLock's attempt, and Lock's first two.
			m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: storeClosed, Times: 3})
		}
		_, err := l.TryLock(ctx, "a", time.Minute)
		wantError(t, "TryLock(a) with a store failing with ErrClosed", err, "trylock", "a", lock.ErrUnavailable)
		wantIs(t, "TryLock(a) with a store failing with ErrClosed", err, storeClosed)
		var e *lock.Error
		if errors.As(err, &e) && e.Err == lock.ErrClosed {
			t.Errorf("TryLock(a) = %v; want ErrUnavailable, not the locker's own ErrClosed", err)
		}

		_, err = l.Lock(ctx, "a", time.Minute, lock.WithRetry(lock.Retry{Attempts: 3, Delay: time.Millisecond}))
		wantNil(t, "Lock(a), three attempts, the first two failing with ErrClosed", err)
	})
}
