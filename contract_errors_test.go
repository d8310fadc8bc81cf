package lock_test

import (
	"errors"
	"testing"
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
		_, err = l.Extend(ctx, held, time.Minute)
		wantError(t, "Extend(a) with failing stores", err, "extend", "a", lock.ErrUnavailable)
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
