package lock_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// The TTL bounds, at their edges: MaxTTL is accepted (it is "the longest
// TTL the lockers accept") and anything longer refused; the shortest TTL
// accepted is the first that leaves validity after the drift allowance
// (ttl×1% + 2ms by default: 3ms does, 2ms does not).
func TestContractTTLBounds(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := t.Context()
		k, err := l.TryLock(ctx, "max", lock.MaxTTL)
		wantNil(t, "TryLock(max, MaxTTL)", err)
		if !k.Valid() {
			t.Errorf("TryLock(max, MaxTTL) = %+v; want a valid lock", k)
		}
		k, err = l.Extend(ctx, k, lock.MaxTTL)
		wantNil(t, "Extend(max, MaxTTL)", err)
		_, err = l.Extend(ctx, k, lock.MaxTTL+1)
		wantIs(t, "Extend(max, MaxTTL+1ns)", err, lock.ErrInvalid)
		_, err = l.TryLock(ctx, "over", lock.MaxTTL+1)
		wantIs(t, "TryLock(over, MaxTTL+1ns)", err, lock.ErrInvalid)
		wantNil(t, "Unlock(max)", l.Unlock(ctx, k))

		short, err := l.TryLock(ctx, "short", 3*time.Millisecond)
		wantNil(t, "TryLock(short, 3ms)", err)
		if r := short.Remaining(); r <= 0 || r > time.Millisecond {
			t.Errorf("TryLock(short, 3ms).Remaining() = %v; want within (0, 1ms]: 3ms − 2.03ms drift", r)
		}
		_, err = l.TryLock(ctx, "shorter", 2*time.Millisecond)
		wantIs(t, "TryLock(shorter, 2ms)", err, lock.ErrInvalid)
		_, err = l.Extend(ctx, short, 2*time.Millisecond)
		wantIs(t, "Extend(short, 2ms)", err, lock.ErrInvalid)
		wantNil(t, "Unlock(short)", l.Unlock(ctx, short))
		noResidue(t, ms...)
	})
}
