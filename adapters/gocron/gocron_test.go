package gocronlock_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	gocronlock "github.com/lockkit/lock/adapters/gocron"
	"github.com/lockkit/lock/stores/memory"
)

func single(t *testing.T, s lock.Store) *lock.SingleLocker {
	t.Helper()
	l, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newLocker(t *testing.T, s lock.Store, opts ...gocronlock.Option) *gocronlock.Locker {
	t.Helper()
	l, err := gocronlock.NewLocker(single(t, s), time.Second, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLockerOneReplicaRunsTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		a, b := newLocker(t, m), newLocker(t, m)
		held, err := a.Lock(ctx, "report")
		if err != nil {
			t.Fatalf("a.Lock(report) = %v; want nil", err)
		}
		time.Sleep(5 * time.Second) // a job longer than the TTL: the lock is kept extended
		if _, err := b.Lock(ctx, "report"); !errors.Is(err, lock.ErrSkipped) {
			t.Fatalf("b.Lock(report) while a runs it = %v; want ErrSkipped", err)
		}
		if err := held.Unlock(ctx); err != nil {
			t.Fatalf("Unlock() = %v; want nil", err)
		}
		held, err = b.Lock(ctx, "report")
		if err != nil {
			t.Fatalf("b.Lock(report) after a's run = %v; want nil", err)
		}
		if err := held.Unlock(ctx); err != nil {
			t.Fatalf("Unlock() = %v; want nil", err)
		}
		if r := m.Resources(); len(r) > 0 {
			t.Errorf("store holds %q after every run; want nothing", r)
		}
	})
}

func TestLockerMinInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		a := newLocker(t, m, gocronlock.WithMinInterval(time.Minute))
		b := newLocker(t, m, gocronlock.WithMinInterval(time.Minute))
		held, err := a.Lock(ctx, "report")
		if err != nil {
			t.Fatalf("a.Lock(report) = %v", err)
		}
		if err := held.Unlock(ctx); err != nil {
			t.Fatalf("Unlock() = %v", err)
		}
		time.Sleep(59 * time.Second)
		if _, err := b.Lock(ctx, "report"); !errors.Is(err, lock.ErrSkipped) {
			t.Fatalf("b.Lock(report) within the interval = %v; want ErrSkipped", err)
		}
		time.Sleep(time.Second)
		held, err = b.Lock(ctx, "report")
		if err != nil {
			t.Fatalf("b.Lock(report) after the interval = %v; want nil", err)
		}
		_ = held.Unlock(ctx)
	})
}

func TestElector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		newElector := func() *gocronlock.Elector {
			e, err := gocronlock.NewElector(single(t, m), "scheduler", time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		a, b := newElector(), newElector()
		if err := a.IsLeader(ctx); err != nil {
			t.Fatalf("a.IsLeader() = %v; want nil", err)
		}
		time.Sleep(5 * time.Second) // terms are renewed
		if err := a.IsLeader(ctx); err != nil {
			t.Fatalf("a.IsLeader() later = %v; want nil", err)
		}
		if err := b.IsLeader(ctx); !errors.Is(err, gocronlock.ErrNotLeader) || !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("b.IsLeader() while a leads = %v; want ErrNotLeader", err)
		}
		if _, ok := a.Term(); !ok {
			t.Error("a.Term() while leading: none")
		}
		if err := a.Close(ctx); err != nil {
			t.Fatalf("a.Close() = %v", err)
		}
		if err := a.IsLeader(ctx); !errors.Is(err, gocronlock.ErrNotLeader) {
			t.Fatalf("a.IsLeader() after Close = %v; want ErrNotLeader", err)
		}
		if err := b.IsLeader(ctx); err != nil {
			t.Fatalf("b.IsLeader() after a resigned = %v; want nil", err)
		}
		// b's term is lost (its lock expires under it): b campaigns again.
		m.Expire("scheduler")
		time.Sleep(2 * time.Second)
		if err := b.IsLeader(ctx); err != nil {
			t.Fatalf("b.IsLeader() after losing its term = %v; want nil (elected again)", err)
		}
		if err := b.Close(ctx); err != nil {
			t.Fatalf("b.Close() = %v", err)
		}
		if r := m.Resources(); len(r) > 0 {
			t.Errorf("store holds %q after Close; want nothing", r)
		}
	})
}

func TestNewRefusesBadInput(t *testing.T) {
	l := single(t, memory.New())
	if _, err := gocronlock.NewLocker(nil, time.Second); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("NewLocker(nil) = %v; want ErrInvalid", err)
	}
	if _, err := gocronlock.NewLocker(l, 0); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("NewLocker(ttl 0) = %v; want ErrInvalid", err)
	}
	if _, err := gocronlock.NewElector(l, "", time.Second); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("NewElector(empty role) = %v; want ErrInvalid", err)
	}
	if _, err := gocronlock.NewElector(nil, "r", time.Second); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("NewElector(nil) = %v; want ErrInvalid", err)
	}
}
