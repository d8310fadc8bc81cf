package lock_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// markerFailing is a store of plain locks (no permits of its own, so a
// semaphore over it is one of plain locks) over a memory store, whose
// calls on a semaphore's limit marker fail while failing is set.
type markerFailing struct {
	m       *memory.Store
	failing atomic.Bool
}

var errMarkerStore = errors.New("the marker's server is unreachable")

func (s *markerFailing) fail(resource string) error {
	if s.failing.Load() && strings.HasSuffix(resource, "~limit") {
		return errMarkerStore
	}
	return nil
}

func (s *markerFailing) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.fail(resource); err != nil {
		return err
	}
	return s.m.Acquire(ctx, resource, token, ttl)
}

func (s *markerFailing) Release(ctx context.Context, resource, token string) error {
	return s.m.Release(ctx, resource, token)
}

func (s *markerFailing) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.fail(resource); err != nil {
		return err
	}
	return s.m.Extend(ctx, resource, token, ttl)
}

func (s *markerFailing) Exists(ctx context.Context, resource string) (bool, error) {
	if err := s.fail(resource); err != nil {
		return false, err
	}
	return s.m.Exists(ctx, resource)
}

// A semaphore of plain locks grants a permit only once its limit marker
// is confirmed: by its one store, or by a quorum of a MultiLocker's. A
// marker call that failed may have hidden another limit's marker: the
// permit, granted anyway, was one too many for the limit in force.
func TestSemaphoreGrantsOnlyWithTheMarkerConfirmed(t *testing.T) {
	t.Run("one store", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			st := &markerFailing{m: memory.New()}
			two := mustSemaphore(t, mustSingle(t, st, nil), 2)
			p, err := two.TryLock(ctx, "jobs", time.Minute)
			wantNil(t, "two.TryLock(jobs)", err)
			three := mustSemaphore(t, mustSingle(t, st, nil), 3)
			_, err = three.TryLock(ctx, "jobs", time.Minute)
			wantIs(t, "three.TryLock(jobs) while limit 2's permit is held (the control)", err, lock.ErrLimitMismatch)

			st.failing.Store(true)
			_, err = three.TryLock(ctx, "jobs", time.Minute)
			wantIs(t, "three.TryLock(jobs), its marker call failing, while limit 2's permit is held", err, lock.ErrUnavailable)
			if !errors.Is(err, errMarkerStore) {
				t.Errorf("three.TryLock(jobs) = %v; want the store's error in the chain", err)
			}
			if got := st.m.Resources(); len(got) != 2 { // limit 2's slot and marker
				t.Errorf("the store holds %q after the refused acquisition; want limit 2's permit and marker only", got)
			}
			st.failing.Store(false)
			wantNil(t, "two.Unlock(p)", two.Unlock(ctx, p))
		})
	})
	t.Run("Redlock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			sts := []*markerFailing{{m: memory.New()}, {m: memory.New()}, {m: memory.New()}}
			stores := []lock.Store{sts[0], sts[1], sts[2]}
			two := mustSemaphore(t, mustMulti(t, stores, nil), 2)
			p, err := two.TryLock(ctx, "jobs", time.Minute)
			wantNil(t, "two.TryLock(jobs)", err)
			synctest.Wait()
			sts[0].m.Expire("jobs~limit") // m0 lost limit 2's marker; m1 and m2 hold it, and fail
			sts[1].failing.Store(true)
			sts[2].failing.Store(true)
			three := mustSemaphore(t, mustMulti(t, stores, nil), 3)
			_, err = three.TryLock(ctx, "jobs", time.Minute)
			wantIs(t, "three.TryLock(jobs), its marker confirmed by 1 store of 3, while limit 2's permit is held", err, lock.ErrUnavailable)
			synctest.Wait()
			if ok, _ := sts[0].m.Exists(ctx, "jobs~limit"); ok {
				t.Error("m0 holds a limit marker after limit 3's refused acquisition; want the one it took there released")
			}

			sts[2].failing.Store(false) // a minority failing: the marker is confirmed by a quorum
			q, err := two.TryLock(ctx, "jobs", time.Minute)
			wantNil(t, "two.TryLock(jobs), its marker confirmed by 2 stores of 3", err)
			sts[1].failing.Store(false)
			wantNil(t, "two.Unlock(q)", two.Unlock(ctx, q))
			wantNil(t, "two.Unlock(p)", two.Unlock(ctx, p))
		})
	})
}
