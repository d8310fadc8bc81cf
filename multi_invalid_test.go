package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/brokenstore"
	"github.com/lockkit/lock/stores/memory"
)

// refusesNames is a store without a name rule of its own whose Release,
// Extend and Exists refuse the name in the call itself, with an error
// matching ErrInvalid; releases counts the Release calls that reach it.
func refusesNames(releases *atomic.Int64) *brokenstore.Store {
	refused := fmt.Errorf("%w: name refused by the store", lock.ErrInvalid)
	return brokenstore.New(func(_ *brokenstore.Store, _ *memory.Store, f *brokenstore.Funcs) {
		f.Release = func(context.Context, string, string) error {
			releases.Add(1)
			return refused
		}
		f.Extend = func(context.Context, string, string, time.Duration) error { return refused }
		f.Exists = func(context.Context, string) (bool, error) { return false, refused }
	})
}

// wantInvalidNotUnavailable fails the test unless err matches ErrInvalid
// and not ErrUnavailable: a refusal of the request is final.
func wantInvalidNotUnavailable(t *testing.T, call string, err error) {
	t.Helper()
	if !errors.Is(err, lock.ErrInvalid) || errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("%s = %v; want ErrInvalid, not ErrUnavailable", call, err)
	}
}

// Stores that refuse an Unlock, Extend or IsLocked as invalid input refuse
// it again: when they leave too few stores for a quorum, a MultiLocker
// reports ErrInvalid, not ErrUnavailable, and does not ask them again.
func TestMultiStoreRefusalIsInvalid(t *testing.T) {
	for refusing := 1; refusing <= 3; refusing++ {
		t.Run(fmt.Sprintf("%d of 3 refuse", refusing), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				releases := make([]atomic.Int64, refusing)
				stores := []lock.Store{memory.New(), memory.New(), memory.New()}
				for i := range refusing {
					stores[i] = refusesNames(&releases[i])
				}
				m := mustMulti(t, stores, nil)
				l, err := m.TryLock(ctx, "r", time.Minute)
				wantNil(t, "TryLock(r)", err)
				_, extendErr := m.Extend(ctx, l, time.Minute)
				unlockErr := m.Unlock(ctx, l)
				_, isLockedErr := m.IsLocked(ctx, "free")
				if refusing == 1 {
					wantNil(t, "Extend(r) with 1 of 3 stores refusing", extendErr)
					wantNil(t, "Unlock(r) with 1 of 3 stores refusing", unlockErr)
				} else {
					wantInvalidNotUnavailable(t, fmt.Sprintf("Extend(r) with %d of 3 stores refusing", refusing), extendErr)
					wantInvalidNotUnavailable(t, fmt.Sprintf("Unlock(r) with %d of 3 stores refusing", refusing), unlockErr)
					wantInvalidNotUnavailable(t, fmt.Sprintf("IsLocked(free) with %d of 3 stores refusing", refusing), isLockedErr)
				}
				time.Sleep(time.Minute) // any release asked again in the background
				for i := range releases {
					if n := releases[i].Load(); n != 1 {
						t.Errorf("store %d, which refuses the name, was asked to release %d times; want 1: it refuses again", i, n)
					}
				}
			})
		})
	}
}

// A SingleLocker reports a store's refusal of Unlock, Extend or IsLocked
// as invalid input as it reports one of Lock, and as a MultiLocker does:
// ErrInvalid, not ErrUnavailable.
func TestSingleStoreRefusalIsInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		var releases atomic.Int64
		s := mustSingle(t, refusesNames(&releases), nil)
		l, err := s.TryLock(ctx, "r", time.Minute)
		wantNil(t, "TryLock(r)", err)
		_, err = s.Extend(ctx, l, time.Minute)
		wantInvalidNotUnavailable(t, "Extend(r) on a store that refuses the name", err)
		wantInvalidNotUnavailable(t, "Unlock(r) on a store that refuses the name", s.Unlock(ctx, l))
		_, err = s.IsLocked(ctx, "r")
		wantInvalidNotUnavailable(t, "IsLocked(r) on a store that refuses the name", err)
	})
}
