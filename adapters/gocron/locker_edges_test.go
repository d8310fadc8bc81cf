package gocronlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	gocronlock "github.com/lockkit/lock/adapters/gocron"
	"github.com/lockkit/lock/stores/memory"
)

// A context that has ended takes no lock (gocron passes the job's
// context, which ends when the job is removed or the scheduler stops).
func TestLockWithEndedContextTakesNothing(t *testing.T) {
	m := memory.New()
	l := newLocker(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	held, err := l.Lock(ctx, "report")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Lock(canceled ctx, report) = %v; want context.Canceled", err)
	}
	if held != nil {
		_ = held.Unlock(context.Background())
	}
	if r := m.Resources(); len(r) > 0 {
		t.Errorf("store holds %q after Lock with a canceled context; want nothing", r)
	}
}

// A nil context is refused (it made the run's goroutine panic).
func TestLockRefusesNilContext(t *testing.T) {
	l := newLocker(t, memory.New())
	var nilCtx context.Context
	if _, err := l.Lock(nilCtx, "report"); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Lock(nil ctx, report) = %v; want ErrInvalid", err)
	}
}

// A minimum interval the lock library would refuse at each run is
// refused by NewLocker instead, before any job runs.
func TestNewLockerRefusesBadMinInterval(t *testing.T) {
	l := single(t, memory.New())
	for _, d := range []time.Duration{-time.Second, lock.MaxTTL + time.Second} {
		if _, err := gocronlock.NewLocker(l, time.Second, gocronlock.WithMinInterval(d)); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("NewLocker(WithMinInterval(%v)) = %v; want ErrInvalid", d, err)
		}
	}
	if _, err := gocronlock.NewLocker(l, time.Second, gocronlock.WithMinInterval(lock.MaxTTL)); err != nil {
		t.Errorf("NewLocker(WithMinInterval(MaxTTL)) = %v; want nil", err)
	}
}

// A lock lost while the job runs is reported by Unlock (ErrLost), every
// time it is called; a store failure at Lock is no skip.
func TestLockerLossAndFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		l := newLocker(t, m)
		held, err := l.Lock(ctx, "report")
		if err != nil {
			t.Fatalf("Lock(report) = %v; want nil", err)
		}
		m.Expire("report")
		time.Sleep(2 * time.Second) // the next renewal finds the lock gone
		for range 2 {
			if err := held.Unlock(ctx); !errors.Is(err, lock.ErrLost) {
				t.Errorf("Unlock() after the lock was lost = %v; want ErrLost", err)
			}
		}
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errors.New("connection reset")})
		_, err = l.Lock(ctx, "report")
		if !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrSkipped) {
			t.Errorf("Lock(report) with the store failing = %v; want ErrUnavailable, not ErrSkipped", err)
		}
	})
}

// A ttl the lockers refuse (above lock.MaxTTL) is refused by NewLocker,
// as a ttl of zero is, rather than by every run, which gocron would skip.
func TestNewLockerRefusesTTLAboveMax(t *testing.T) {
	l := single(t, memory.New())
	if _, err := gocronlock.NewLocker(l, lock.MaxTTL+time.Second); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("NewLocker(ttl MaxTTL+1s) = %v; want ErrInvalid", err)
	}
	if _, err := gocronlock.NewLocker(l, lock.MaxTTL); err != nil {
		t.Errorf("NewLocker(ttl MaxTTL) = %v; want nil", err)
	}
}

// IsLeader with a nil context is refused with ErrInvalid whatever the
// elector's state: while it leads, after its term ended (where it
// panicked), and before it ever led.
func TestElectorIsLeaderNilContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e, err := gocronlock.NewElector(single(t, m), "scheduler", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var nilCtx context.Context // nil: the bad input under test
		if err := e.IsLeader(nilCtx); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("IsLeader(nil) before leading = %v; want ErrInvalid", err)
		}
		if err := e.IsLeader(t.Context()); err != nil {
			t.Fatalf("IsLeader() = %v; want nil", err)
		}
		if err := e.IsLeader(nilCtx); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("IsLeader(nil) while leading = %v; want ErrInvalid", err)
		}
		m.Expire("scheduler")
		time.Sleep(2 * time.Second) // the term's end has passed
		if err := e.IsLeader(nilCtx); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("IsLeader(nil) after the term ended = %v; want ErrInvalid", err)
		}
		_ = e.Close(t.Context())
	})
}

// Close with a nil context is refused with ErrInvalid and changes
// nothing: the term it could not resign (Resign refuses a nil context)
// stays the elector's to resign, instead of being forgotten while its
// renewals keep the role taken for ever.
func TestElectorCloseNilContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e, err := gocronlock.NewElector(single(t, m), "scheduler", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.IsLeader(t.Context()); err != nil {
			t.Fatalf("IsLeader() = %v; want nil", err)
		}
		var nilCtx context.Context // nil: the bad input under test
		if err := e.Close(nilCtx); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("Close(nil) = %v; want ErrInvalid", err)
		}
		if err := e.IsLeader(t.Context()); err != nil {
			t.Errorf("IsLeader() after a refused Close(nil) = %v; want nil (still the leader)", err)
		}
		if err := e.Close(t.Context()); err != nil {
			t.Fatalf("Close() = %v; want nil", err)
		}
		if r := m.Resources(); len(r) > 0 {
			t.Errorf("store holds %q after Close; want the role released", r)
		}
	})
}
