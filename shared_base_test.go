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

// A semaphore or a read-write lock built over a locker that lets several
// holders in at once would bound nothing: a Semaphore of one permit over
// a reader side let two campaigns of an election win at once. NewSemaphore
// and NewRWLocker refuse such a locker, and accept one that is exclusive.
func TestSemaphoreAndRWLockerRefuseSharedLockers(t *testing.T) {
	base := mustSingle(t, memory.New(), nil)
	rw, err := lock.NewRWLocker(base)
	wantNil(t, "NewRWLocker(base)", err)
	three, one := mustSemaphore(t, base, 3), mustSemaphore(t, base, 1)
	for name, shared := range map[string]lock.Locker{"a reader side": rw.Reader(), "a Semaphore of 3": three} {
		if s, err := lock.NewSemaphore(shared, 1); !errors.Is(err, lock.ErrInvalid) || s != nil {
			t.Errorf("NewSemaphore(%s, 1) = %v, %v; want nil, ErrInvalid", name, s, err)
		}
		if l, err := lock.NewRWLocker(shared); !errors.Is(err, lock.ErrInvalid) || l != nil {
			t.Errorf("NewRWLocker(%s) = %v, %v; want nil, ErrInvalid", name, l, err)
		}
	}
	for name, exclusive := range map[string]lock.Locker{"a writer side": rw.Writer(), "a Semaphore of 1": one} {
		s, err := lock.NewSemaphore(exclusive, 1)
		wantNil(t, "NewSemaphore("+name+", 1)", err)
		_, err = lock.NewRWLocker(exclusive)
		wantNil(t, "NewRWLocker("+name+")", err)
		ctx := t.Context()
		held, err := s.TryLock(ctx, "over-"+name, time.Minute)
		wantNil(t, "TryLock on a Semaphore(1) over "+name, err)
		if _, err := s.TryLock(ctx, "over-"+name, time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("a second TryLock on a Semaphore(1) over %s = %v; want ErrNotAcquired", name, err)
		}
		wantNil(t, "Unlock", s.Unlock(ctx, held))
	}
}

// Over an RWLocker's writer side, a campaigner waiting for a reader to
// leave does not lead yet: Leader says nobody does until it is admitted.
func TestLeaderOverWriterSideWaitsForReaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rw, err := lock.NewRWLocker(mustSingle(t, memory.New(), nil))
		wantNil(t, "NewRWLocker", err)
		r, err := rw.Reader().Lock(t.Context(), "role", time.Minute)
		wantNil(t, "Reader().Lock", err)
		e := mustElection(t, rw.Writer(), "role", 10*time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		won := make(chan *lock.Term, 1)
		go func() {
			term, err := e.Campaign(ctx)
			if err != nil {
				t.Errorf("Campaign = %v", err)
			}
			won <- term
		}()
		synctest.Wait() // the campaigner waits for the reader
		if led, err := e.Leader(t.Context()); err != nil || led.Elected {
			t.Errorf("Leader() while the only campaigner waits for a reader = %+v, %v; want not elected", led, err)
		}
		wantNil(t, "Reader().Unlock", rw.Reader().Unlock(t.Context(), r))
		term := <-won
		if led, err := e.Leader(t.Context()); err != nil || !led.Elected {
			t.Errorf("Leader() once the campaigner is admitted = %+v, %v; want elected", led, err)
		}
		if term != nil {
			wantNil(t, "Resign", term.Resign(t.Context()))
		}
	})
}
