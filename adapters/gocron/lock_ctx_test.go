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

// A ctx that ends while the store is taking the lock ends the attempt:
// Lock returns ctx's error when ctx ends, not when the store answers, and
// takes no lock.
func TestLockContextEndsDuringAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := newLocker(t, m)
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		held, err := l.Lock(ctx, "report")
		if err == nil {
			held.Unlock(context.Background())
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock(ctx ending at 100ms, store answering in 1h) = %v; want context.DeadlineExceeded", err)
		}
		if took := time.Since(start); took != 100*time.Millisecond {
			t.Errorf("Lock(ctx ending at 100ms, store answering in 1h) returned after %v; want at ctx's end (100ms)", took)
		}
		synctest.Wait()
		if r := m.Resources(); len(r) > 0 {
			t.Errorf("store holds %q after a Lock that ctx ended; want nothing", r)
		}
	})
}

// A ctx canceled (not timed out) during the attempt: its error too.
func TestLockContextCanceledDuringAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := newLocker(t, m)
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Millisecond, cancel)
		if held, err := l.Lock(ctx, "report"); !errors.Is(err, context.Canceled) {
			if err == nil {
				held.Unlock(context.Background())
			}
			t.Errorf("Lock(ctx canceled during the attempt) = %v; want context.Canceled", err)
		}
	})
}

// cancelOnAcquired cancels a context as the locker takes a lock: ctx ends
// between the attempt and the job's start.
type cancelOnAcquired struct{ cancel context.CancelFunc }

func (h cancelOnAcquired) Observe(_ context.Context, e lock.Event) {
	if e.Kind == lock.EventAcquired {
		h.cancel()
	}
}

// A ctx that ends as the lock is taken: Lock returns its error, and the
// lock is given up as by a run that ended at once — released, or kept to
// the minimum interval's end.
func TestLockContextEndsAsLockIsTaken(t *testing.T) {
	for _, interval := range []time.Duration{0, time.Minute} {
		t.Run("interval="+interval.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				m := memory.New()
				ll, err := lock.NewSingle(m, &lock.Options{Hook: cancelOnAcquired{cancel}})
				if err != nil {
					t.Fatal(err)
				}
				l, err := gocronlock.NewLocker(ll, time.Second, gocronlock.WithMinInterval(interval))
				if err != nil {
					t.Fatal(err)
				}
				held, err := l.Lock(ctx, "report")
				if err == nil {
					held.Unlock(context.Background())
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Lock(ctx canceled as the lock is taken) = %v; want context.Canceled", err)
				}
				synctest.Wait()
				want := interval > 0 // kept to the interval's end
				if got := len(m.Resources()) > 0; got != want {
					t.Errorf("store holds the job's lock after Lock = %v: %v; want %v", err, got, want)
				}
			})
		})
	}
}

// Unlock is bounded by the lock's TTL, also when WithMinInterval makes it
// extend the lock and the store does not answer.
func TestUnlockMinIntervalBoundedByTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := newLocker(t, m, gocronlock.WithMinInterval(time.Hour)) // TTL 1s
		held, err := l.Lock(t.Context(), "report")
		if err != nil {
			t.Fatal(err)
		}
		m.Inject(memory.Fault{Ops: memory.OpExtend, Delay: 24 * time.Hour})
		start := time.Now()
		err = held.Unlock(context.Background())
		if took := time.Since(start); took > time.Second {
			t.Errorf("Unlock() = %v after %v, with a store not answering the extension; want at most the TTL (1s)", err, took)
		}
	})
}
