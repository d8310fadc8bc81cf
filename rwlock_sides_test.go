package lock_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
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

// shortNames is a memory store, a Permitter, that refuses names longer
// than max bytes.
type shortNames struct {
	*memory.Store
	max int
}

func (s shortNames) ValidateResource(r string) error {
	if len(r) > s.max {
		return fmt.Errorf("%w: %q is longer than %d bytes", lock.ErrInvalid, r, s.max)
	}
	return nil
}

// Over a store that keeps the readers' permits itself, the only names a
// read-write lock derives are the resource with "~read" and "~write": a
// resource for which both are valid names of the store is accepted, and
// not refused for the names of a semaphore of plain locks ("~read~permit"
// and a slot number, "~read~limit"), which it never uses.
func TestRWLockerNativeChecksOnlyTheNamesItUses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		resource := strings.Repeat("d", 20)
		rw := mustRW(t, mustSingle(t, shortNames{m, len(resource + "~write")}, nil))
		r, err := rw.Reader().TryLock(ctx, resource, time.Minute)
		wantNil(t, "Reader().TryLock(resource) whose ~read and ~write names the store accepts", err)
		wantNil(t, "Reader().Unlock(r)", rw.Reader().Unlock(ctx, r))
		w, err := rw.Writer().TryLock(ctx, resource, time.Minute)
		wantNil(t, "Writer().TryLock(resource) whose ~read and ~write names the store accepts", err)
		wantNil(t, "Writer().Unlock(w)", rw.Writer().Unlock(ctx, w))

		long := resource + "d" // its ~write name is too long
		_, err = rw.Reader().TryLock(ctx, long, time.Minute)
		wantIs(t, "Reader().TryLock(long) whose ~write name the store refuses", err, lock.ErrInvalid)
		_, err = rw.Writer().TryLock(ctx, long, time.Minute)
		wantIs(t, "Writer().TryLock(long) whose ~write name the store refuses", err, lock.ErrInvalid)
		noRW(t, []*memory.Store{m}, resource)
	})
}
