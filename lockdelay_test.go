package lock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// lockDelayLockers returns a holder's and a rival's locker over the same
// memory stores, one store or three (Redlock), both with opts.
func lockDelayLockers(t *testing.T, n int, o *lock.Options) (holder, rival lock.Locker, stores []*memory.Store) {
	ms, ls := memStores(n)
	if n == 1 {
		return mustSingle(t, ls[0], o), mustSingle(t, ls[0], o), ms
	}
	return mustMulti(t, ls, o), mustMulti(t, ls, o), ms
}

// A lock whose holder vanished stays taken for the delay after its TTL;
// the validity its holder sees is the TTL's.
func TestLockDelayAfterAVanishedHolder(t *testing.T) {
	for _, n := range []int{1, 3} {
		for _, delay := range []time.Duration{0, 5 * time.Second} {
			t.Run(lockDelayName(n, delay), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					holder, rival, stores := lockDelayLockers(t, n, &lock.Options{LockDelay: delay})
					ctx := t.Context()
					start := time.Now()
					l, err := holder.Lock(ctx, "r", time.Second)
					wantNil(t, "Lock()", err)
					if want := start.Add(time.Second - 12*time.Millisecond); !l.ValidUntil.Equal(want) {
						t.Errorf("ValidUntil = %v; want the TTL's validity, %v", l.ValidUntil, want)
					}
					// The holder vanishes: no Unlock, no Extend.
					time.Sleep(time.Second + time.Millisecond)
					_, err = rival.TryLock(ctx, "r", time.Second)
					if delay > 0 {
						wantIs(t, "TryLock() within the delay", err, lock.ErrNotAcquired)
						time.Sleep(delay - 2*time.Millisecond)
						_, err = rival.TryLock(ctx, "r", time.Second)
						wantIs(t, "TryLock() just before the delay's end", err, lock.ErrNotAcquired)
						time.Sleep(2 * time.Millisecond)
						_, err = rival.TryLock(ctx, "r", time.Second)
					}
					wantNil(t, "TryLock() after the TTL and the delay", err)
					time.Sleep(time.Second + delay)
					noResidue(t, stores...)
				})
			})
		}
	}
}

func lockDelayName(n int, delay time.Duration) string {
	s := "single"
	if n > 1 {
		s = "redlock"
	}
	return s + "/delay=" + delay.String()
}

// Unlock frees a lock at once, delay or not.
func TestLockDelayUnlockFreesAtOnce(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(lockDelayName(n, time.Minute), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				holder, rival, stores := lockDelayLockers(t, n, &lock.Options{LockDelay: time.Minute})
				ctx := t.Context()
				l, err := holder.Lock(ctx, "r", time.Second)
				wantNil(t, "Lock()", err)
				wantNil(t, "Unlock()", holder.Unlock(ctx, l))
				l, err = rival.TryLock(ctx, "r", time.Second)
				wantNil(t, "TryLock() after Unlock", err)
				wantNil(t, "Unlock()", rival.Unlock(ctx, l))
				noResidue(t, stores...)
			})
		})
	}
}

// Extend keeps the delay: the stores keep the lock for the delay after
// the extended TTL.
func TestLockDelayExtend(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(lockDelayName(n, 5*time.Second), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				holder, rival, stores := lockDelayLockers(t, n, &lock.Options{LockDelay: 5 * time.Second})
				ctx := t.Context()
				l, err := holder.Lock(ctx, "r", time.Second)
				wantNil(t, "Lock()", err)
				time.Sleep(500 * time.Millisecond)
				extendedAt := time.Now()
				l, err = holder.Extend(ctx, l, 2*time.Second)
				wantNil(t, "Extend()", err)
				if want := extendedAt.Add(2*time.Second - 22*time.Millisecond); !l.ValidUntil.Equal(want) {
					t.Errorf("ValidUntil after Extend = %v; want the TTL's validity, %v", l.ValidUntil, want)
				}
				time.Sleep(2*time.Second + 5*time.Second - time.Millisecond)
				_, err = rival.TryLock(ctx, "r", time.Second)
				wantIs(t, "TryLock() within the extended TTL and the delay", err, lock.ErrNotAcquired)
				time.Sleep(time.Millisecond)
				l, err = rival.TryLock(ctx, "r", time.Second)
				wantNil(t, "TryLock() after the extended TTL and the delay", err)
				wantNil(t, "Unlock()", rival.Unlock(ctx, l))
				noResidue(t, stores...)
			})
		})
	}
}

func TestLockDelayRefusesBadInput(t *testing.T) {
	ms, ls := memStores(3)
	for _, d := range []time.Duration{-time.Second, lock.MaxTTL} {
		if _, err := lock.NewSingle(ms[0], &lock.Options{LockDelay: d}); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("NewSingle(LockDelay: %v) = %v; want ErrInvalid", d, err)
		}
		if _, err := lock.NewMulti(ls, &lock.Options{LockDelay: d}); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("NewMulti(LockDelay: %v) = %v; want ErrInvalid", d, err)
		}
	}
	o := &lock.Options{LockDelay: time.Hour}
	ctx := context.Background()
	for _, l := range []lock.Locker{mustSingle(t, ms[0], o), mustMulti(t, ls, o)} {
		_, err := l.TryLock(ctx, "r", lock.MaxTTL-time.Hour+time.Second)
		wantIs(t, "TryLock(ttl + LockDelay > MaxTTL)", err, lock.ErrInvalid)
		held, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock()", err)
		_, err = l.Extend(ctx, held, lock.MaxTTL)
		wantIs(t, "Extend(ttl + LockDelay > MaxTTL)", err, lock.ErrInvalid)
		wantNil(t, "Unlock()", l.Unlock(ctx, held))
	}
	noResidue(t, ms...)
}

// With a lock delay, a lock whose holder vanished without releasing it
// stays taken for the delay after its TTL; Unlock frees it at once.
func ExampleOptions_lockDelay() {
	ctx := context.Background()
	store := memory.New()
	o := &lock.Options{LockDelay: time.Minute}
	holder, _ := lock.NewSingle(store, o)
	rival, _ := lock.NewSingle(store, o)

	l, _ := holder.Lock(ctx, "ledger", 50*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // the holder pauses past its validity
	fmt.Println("holder's lock valid:", l.Valid())
	_, err := rival.TryLock(ctx, "ledger", time.Second)
	fmt.Println("rival within the delay:", err)

	// The holder wakes: nobody has been inside; it releases.
	fmt.Println("holder's unlock:", holder.Unlock(ctx, l))
	_, err = rival.TryLock(ctx, "ledger", time.Second)
	fmt.Println("rival after the release:", err)
	// Output:
	// holder's lock valid: false
	// rival within the delay: trylock "ledger": not acquired: held by another owner
	// holder's unlock: <nil>
	// rival after the release: <nil>
}

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
