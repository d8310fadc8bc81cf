package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A lock passed to the other side's Unlock or Extend (a writer's to the
// reader side, a reader's to the writer side) is not held on that side:
// the call reports ErrNotHeld on every setup, never ErrInvalid on some
// and ErrNotHeld on others, and releases nothing.
func TestRWLockerLockOfTheOtherSide(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		rw := mustRW(t, newLocker(t))

		w, err := rw.Writer().TryLock(ctx, "doc", time.Minute)
		wantNil(t, "Writer().TryLock(doc)", err)
		wantIs(t, "Reader().Unlock(writer's lock)", rw.Reader().Unlock(ctx, w), lock.ErrNotHeld)
		_, err = rw.Reader().Extend(ctx, w, time.Minute)
		wantIs(t, "Reader().Extend(writer's lock)", err, lock.ErrNotHeld)
		if ok, err := rw.Writer().IsLocked(ctx, "doc"); !ok || err != nil {
			t.Fatalf("Writer().IsLocked(doc) after Reader().Unlock(writer's lock) = %v, %v; want true, nil", ok, err)
		}
		wantNil(t, "Writer().Unlock(w)", rw.Writer().Unlock(ctx, w))

		r, err := rw.Reader().TryLock(ctx, "doc", time.Minute)
		wantNil(t, "Reader().TryLock(doc)", err)
		wantIs(t, "Writer().Unlock(reader's lock)", rw.Writer().Unlock(ctx, r), lock.ErrNotHeld)
		if _, err := rw.Writer().Extend(ctx, r, time.Minute); !errors.Is(err, errors.ErrUnsupported) {
			wantIs(t, "Writer().Extend(reader's lock)", err, lock.ErrNotHeld)
		}
		if ok, err := rw.Reader().IsLocked(ctx, "doc"); !ok || err != nil {
			t.Fatalf("Reader().IsLocked(doc) after Writer().Unlock(reader's lock) = %v, %v; want true, nil", ok, err)
		}
		wantNil(t, "Reader().Unlock(r)", rw.Reader().Unlock(ctx, r))
		noRW(t, mems, "doc")
	})
}
