package lock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
)

// Past its validity but within the lock delay, the stores still hold the
// lock for its holder and nobody else can have taken it: the holder's
// Extend extends it (a lock the stores hold is not re-created) and its
// Unlock releases it, as Options.LockDelay says.
func TestLockDelayHolderPastValidity(t *testing.T) {
	for _, n := range []int{1, 3} {
		for _, op := range []string{"extend", "unlock"} {
			t.Run(lockDelayName(n, 5*time.Second)+"/"+op, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					holder, rival, stores := lockDelayLockers(t, n, &lock.Options{LockDelay: 5 * time.Second})
					ctx := t.Context()
					l, err := holder.Lock(ctx, "r", time.Second)
					wantNil(t, "Lock()", err)
					time.Sleep(2 * time.Second) // past ValidUntil and the TTL, within the delay
					if l.Valid() {
						t.Fatalf("lock valid at %v; want its validity (%v) passed", time.Now(), l.ValidUntil)
					}
					switch op {
					case "extend":
						l, err = holder.Extend(ctx, l, time.Second)
						wantNil(t, "Extend() past the validity, within the delay", err)
						if !l.Valid() {
							t.Errorf("extended lock not valid: ValidUntil %v", l.ValidUntil)
						}
						_, err = rival.TryLock(ctx, "r", time.Second)
						wantIs(t, "rival TryLock() after the Extend", err, lock.ErrNotAcquired)
						wantNil(t, "Unlock()", holder.Unlock(ctx, l))
					case "unlock":
						wantNil(t, "Unlock() past the validity, within the delay", holder.Unlock(ctx, l))
					}
					l, err = rival.TryLock(ctx, "r", time.Second)
					wantNil(t, "rival TryLock() after the release", err)
					wantNil(t, "rival Unlock()", rival.Unlock(ctx, l))
					noResidue(t, stores...)
				})
			})
		}
	}
}

// Once the stores let the lock go (ttl + LockDelay), the holder's Extend
// and Unlock report ErrNotHeld.
func TestLockDelayHolderAfterTheDelay(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(lockDelayName(n, 5*time.Second), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				holder, _, stores := lockDelayLockers(t, n, &lock.Options{LockDelay: 5 * time.Second})
				ctx := t.Context()
				l, err := holder.Lock(ctx, "r", time.Second)
				wantNil(t, "Lock()", err)
				time.Sleep(6 * time.Second)
				_, err = holder.Extend(ctx, l, time.Second)
				wantIs(t, "Extend() after ttl + LockDelay", err, lock.ErrNotHeld)
				wantIs(t, "Unlock() after ttl + LockDelay", holder.Unlock(ctx, l), lock.ErrNotHeld)
				noResidue(t, stores...)
			})
		})
	}
}
