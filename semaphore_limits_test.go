package lock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A permit of a semaphore of one limit is not a permit of a semaphore of
// another limit on the same resource and stores: its Unlock and Extend
// there report ErrNotHeld and release or extend nothing, however the
// semaphores were built.
func TestSemaphorePermitOfAnotherLimit(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		two := mustSemaphore(t, newLocker(t), 2)
		five := mustSemaphore(t, newLocker(t), 5)
		p, err := two.TryLock(ctx, "jobs", time.Minute)
		wantNil(t, "two.TryLock(jobs)", err)
		_, err = five.Extend(ctx, p, time.Hour)
		wantIs(t, "five.Extend(a permit of limit 2)", err, lock.ErrNotHeld)
		wantIs(t, "five.Unlock(a permit of limit 2)", five.Unlock(ctx, p), lock.ErrNotHeld)
		if n, err := two.Permits(ctx, "jobs"); n != 1 || err != nil {
			t.Fatalf("two.Permits(jobs) after five.Unlock(its permit) = %d, %v; want 1, nil", n, err)
		}
		time.Sleep(2 * time.Minute)
		if n, err := two.Permits(ctx, "jobs"); n != 0 || err != nil {
			t.Fatalf("two.Permits(jobs) past the permit's TTL = %d, %v; want 0, nil: five.Extend extended it", n, err)
		}
		p, err = two.TryLock(ctx, "jobs", time.Minute)
		wantNil(t, "two.TryLock(jobs) again", err)
		wantNil(t, "two.Unlock(its permit)", two.Unlock(ctx, p))
		noPermits(t, mems, "jobs")
	})
}

// A semaphore built from plain locks refuses a permit of another limit
// before it sends anything.
func TestSemaphorePermitOfAnotherLimitSendsNothing(t *testing.T) {
	c := newCounting("m")
	st := withoutStart{c, c, c, c, c}
	two := mustSemaphore(t, mustSingle(t, st, nil), 2)
	five := mustSemaphore(t, mustSingle(t, st, nil), 5)
	ctx := t.Context()
	p, err := two.TryLock(ctx, "jobs", time.Minute)
	wantNil(t, "two.TryLock(jobs)", err)
	before := c.calls.Load()
	_, err = five.Extend(ctx, p, time.Minute)
	wantIs(t, "five.Extend(a permit of limit 2)", err, lock.ErrNotHeld)
	wantIs(t, "five.Unlock(a permit of limit 2)", five.Unlock(ctx, p), lock.ErrNotHeld)
	if n := c.calls.Load() - before; n != 0 {
		t.Errorf("five.Extend and five.Unlock of a permit of limit 2 made %d store calls; want none", n)
	}
	wantNil(t, "two.Unlock(its permit)", two.Unlock(ctx, p))
}

// A caller with another limit is told of the mismatch while the first
// limit's permits are held, also when they hold every slot it would try
// (it used to get ErrNotAcquired, and its Lock waited until its context
// ended); a caller of the same limit is not.
func TestSemaphoreMismatchWhileEverySlotHeld(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		if !canExtend(t, newLocker(t)) {
			t.Skip("a mismatch is not detected on stores that cannot extend")
		}
		ctx := t.Context()
		two := mustSemaphore(t, newLocker(t), 2)
		one := mustSemaphore(t, newLocker(t), 1)
		var held []lock.Lock
		for range 2 {
			p, err := two.TryLock(ctx, "jobs", time.Minute)
			wantNil(t, "two.TryLock(jobs)", err)
			held = append(held, p)
		}
		_, err := one.TryLock(ctx, "jobs", time.Minute)
		wantIs(t, "one.TryLock(jobs) while limit-2 permits hold every slot", err, lock.ErrLimitMismatch)
		wantIs(t, "one.TryLock(jobs) while limit-2 permits hold every slot", err, lock.ErrInvalid)
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err = one.Lock(cctx, "jobs", time.Minute)
		wantIs(t, "one.Lock(jobs) while limit-2 permits hold every slot", err, lock.ErrLimitMismatch)

		_, err = mustSemaphore(t, newLocker(t), 2).TryLock(ctx, "jobs", time.Minute)
		wantIs(t, "TryLock(jobs) of limit 2 while limit-2 permits hold every slot", err, lock.ErrNotAcquired)
		if errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("TryLock(jobs) of limit 2 while limit-2 permits hold every slot = %v; want no ErrInvalid", err)
		}
		if n, err := two.Permits(ctx, "jobs"); n != 2 || err != nil {
			t.Fatalf("two.Permits(jobs) after the refusals = %d, %v; want 2, nil", n, err)
		}
		for _, p := range held {
			wantNil(t, "two.Unlock(its permit)", two.Unlock(ctx, p))
		}
		noPermits(t, mems, "jobs")
	})
}

// A caller refused for its limit over Redlock leaves no limit marker of
// its own behind. Where only some stores hold the first limit's marker
// (the others lost it, say in a restart), the refused caller's marker,
// taken on those others, made the first limit's callers get
// ErrLimitMismatch until it expired.
func TestSemaphoreMismatchOverRedlockLeavesNoMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ms, ls := memStores(3)
		two := mustSemaphore(t, mustMulti(t, ls, nil), 2)
		p, err := two.TryLock(ctx, "jobs", time.Minute)
		wantNil(t, "two.TryLock(jobs)", err)
		for _, m := range ms[1:] {
			m.Expire("jobs~limit") // lost by these stores: m0 alone holds limit 2's marker
		}
		three := mustSemaphore(t, mustMulti(t, ls, nil), 3)
		_, err = three.TryLock(ctx, "jobs", time.Minute)
		wantIs(t, "three.TryLock(jobs) while m0 holds limit 2's marker", err, lock.ErrLimitMismatch)

		q, err := two.TryLock(ctx, "jobs", time.Minute)
		wantNil(t, "two.TryLock(jobs) after a caller of limit 3 was refused", err)
		wantNil(t, "two.Unlock(q)", two.Unlock(ctx, q))
		wantNil(t, "two.Unlock(p)", two.Unlock(ctx, p))
		noPermits(t, ms, "jobs")
	})
}
