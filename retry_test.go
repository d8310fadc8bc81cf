package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// recording is a store without Waiter that records when acquisitions are
// attempted.
type recording struct {
	basic
	mu    sync.Mutex
	times []time.Time
}

func (r *recording) Acquire(ctx context.Context, res, tok string, ttl time.Duration) error {
	r.mu.Lock()
	r.times = append(r.times, time.Now())
	r.mu.Unlock()
	return r.basic.Acquire(ctx, res, tok, ttl)
}

func (r *recording) gaps() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var g []time.Duration
	for i := 1; i < len(r.times); i++ {
		g = append(g, r.times[i].Sub(r.times[i-1]))
	}
	return g
}

// holdElsewhere takes resource in s under another owner.
func holdElsewhere(t *testing.T, s lock.Store, resource string, ttl time.Duration) lock.Lock {
	t.Helper()
	other := mustSingle(t, s, nil)
	l, err := other.TryLock(context.Background(), resource, ttl)
	if err != nil {
		t.Fatalf("holder TryLock(%s) = %v", resource, err)
	}
	return l
}

func TestRetryCountAndJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recording{basic: basic{memory.New()}}
		holdElsewhere(t, r, "res", time.Hour)
		l := mustSingle(t, r, nil)
		var all []time.Duration
		for range 5 {
			r.times = nil
			_, err := l.Lock(t.Context(), "res", time.Second, lock.WithRetry(lock.Retry{Attempts: 5, Delay: 100 * time.Millisecond}))
			wantIs(t, "Lock(res) held elsewhere, 5 attempts", err, lock.ErrNotAcquired)
			gaps := r.gaps()
			if len(gaps) != 4 {
				t.Fatalf("%d attempts; want 5 (Retry.Attempts counts the first)", len(gaps)+1)
			}
			for _, g := range gaps {
				if g < 50*time.Millisecond || g > 100*time.Millisecond {
					t.Errorf("retry delay %v; want within [50ms, 100ms] (Delay 100ms with jitter)", g)
				}
			}
			all = append(all, gaps...)
		}
		distinct := map[time.Duration]bool{}
		for _, g := range all {
			distinct[g] = true
		}
		if len(distinct) < 2 {
			t.Errorf("20 retry delays took %d distinct values; want jitter to spread them", len(distinct))
		}
	})
}

func TestRetryExponentialBackoffCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recording{basic: basic{memory.New()}}
		holdElsewhere(t, r, "res", time.Hour)
		r.times = nil
		l := mustSingle(t, r, nil)
		_, err := l.Lock(t.Context(), "res", time.Second, lock.WithRetry(lock.Retry{Attempts: 6, Delay: 100 * time.Millisecond, MaxDelay: 400 * time.Millisecond}))
		wantIs(t, "Lock(res) held elsewhere", err, lock.ErrNotAcquired)
		caps := []time.Duration{100, 200, 400, 400, 400}
		gaps := r.gaps()
		if len(gaps) != len(caps) {
			t.Fatalf("%d retries; want %d", len(gaps), len(caps))
		}
		for i, g := range gaps {
			hi := caps[i] * time.Millisecond
			if g < hi/2 || g > hi {
				t.Errorf("retry %d waited %v; want within [%v, %v]", i+1, g, hi/2, hi)
			}
		}
	})
}

// By default Lock waits until its context is done, and then reports the
// context's error: cancellation is distinguishable from contention.
func TestLockWaitsUntilContextDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		holdElsewhere(t, m, "res", time.Hour)
		l := mustSingle(t, m, nil)
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start := time.Now()
		_, err := l.Lock(ctx, "res", time.Second)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Lock(res) held elsewhere until the deadline = %v; want context.DeadlineExceeded, not ErrNotAcquired", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("Lock returned %v after start; want exactly at the 3s deadline", d)
		}
	})
}

// A waiter on a store that can notify wakes on the release, not at the end
// of its retry delay; on a store that cannot, it polls.
func TestWaiterWakesOnRelease(t *testing.T) {
	for _, c := range []struct {
		name     string
		store    func() lock.Store
		acquired time.Duration // -1: at the retry delay
	}{
		{"notifying store", func() lock.Store { return memory.New() }, 100 * time.Millisecond},
		{"polling store", func() lock.Store { return basic{memory.New()} }, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := c.store()
				holder := mustSingle(t, s, nil)
				held, err := holder.TryLock(t.Context(), "res", time.Hour)
				wantNil(t, "holder TryLock(res)", err)
				go func() {
					time.Sleep(100 * time.Millisecond)
					_ = holder.Unlock(context.Background(), held)
				}()
				l := mustSingle(t, s, nil)
				start := time.Now()
				_, err = l.Lock(t.Context(), "res", time.Second, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 10 * time.Second}))
				wantNil(t, "Lock(res)", err)
				got := time.Since(start)
				if c.acquired > 0 && got != c.acquired {
					t.Errorf("acquired %v after start; want %v: the release should wake the waiter", got, c.acquired)
				}
				if c.acquired < 0 && got < 5*time.Second {
					t.Errorf("acquired %v after start; want the retry delay (5s–10s): the store cannot notify", got)
				}
			})
		})
	}
}

func TestStoreErrorsAreRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset, Times: 2})
		l := mustSingle(t, m, nil)
		_, err := l.Lock(t.Context(), "res", time.Second, lock.WithRetry(lock.Retry{Attempts: 3, Delay: time.Millisecond}))
		wantNil(t, "Lock(res) after two store failures, three attempts", err)

		m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset})
		_, err = l.TryLock(t.Context(), "other", time.Second)
		if !errors.Is(err, lock.ErrUnavailable) || !errors.Is(err, errConnReset) || errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("TryLock(other) with a failing store = %v; want ErrUnavailable wrapping the store's error", err)
		}
	})
}

// Cancellation returns promptly, whatever the call is doing, with the
// context's error and nothing left locked.
func TestCancellationAtEachStage(t *testing.T) {
	stages := []struct {
		name          string
		setup         func(m *memory.Store)
		heldElsewhere bool
	}{
		{"while the store answers slowly", func(m *memory.Store) {
			m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour})
		}, false},
		{"while the store loses the reply", func(m *memory.Store) {
			m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour, Err: errConnReset, AfterApply: true})
		}, false},
		{"while waiting to retry", func(m *memory.Store) {
			holdElsewhere(t, m, "res", time.Hour)
		}, true},
	}
	for _, st := range stages {
		for _, multi := range []bool{false, true} {
			name := st.name + "/single"
			if multi {
				name = st.name + "/multi"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ms, ls := memStores(3)
					var l lock.Locker = mustSingle(t, ls[0], nil)
					if multi {
						l = mustMulti(t, ls, &lock.Options{StoreTimeout: 2 * time.Hour})
					}
					for _, m := range ms {
						st.setup(m)
					}
					ctx, cancel := context.WithCancel(t.Context())
					time.AfterFunc(20*time.Millisecond, cancel)
					start := time.Now()
					_, err := l.Lock(ctx, "res", time.Minute, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: time.Hour}))
					if !errors.Is(err, context.Canceled) || errors.Is(err, lock.ErrNotAcquired) {
						t.Fatalf("Lock(res) canceled = %v; want context.Canceled", err)
					}
					if d := time.Since(start); d != 20*time.Millisecond {
						t.Errorf("Lock returned %v after start; want at the cancellation (20ms)", d)
					}
					if !st.heldElsewhere {
						synctest.Wait() // stores still answering are released once they answer
						noResidue(t, ms...)
					}
				})
			})
		}
	}
}

// On a store that cannot notify releases, the default policy polls every
// 5–10ms for a quarter of a second, as a fixed poller would, and backs off
// only after that: a waiter that backs off at once loses the lock, again
// and again, to those that poll faster.
func TestDefaultRetryPollsBeforeBackingOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recording{basic: basic{memory.New()}}
		holdElsewhere(t, r, "res", 240*time.Millisecond)
		r.times = nil
		l := mustSingle(t, r, nil)
		_, err := l.Lock(t.Context(), "res", time.Second)
		wantNil(t, "Lock(res) held elsewhere for 240ms", err)
		gaps := r.gaps()
		for i, g := range gaps {
			if g < 5*time.Millisecond || g > 10*time.Millisecond {
				t.Fatalf("retry %d waited %v; want within [5ms, 10ms] on a store that cannot notify", i+1, g)
			}
		}
		if len(gaps) < 24 {
			t.Errorf("%d retries in 240ms; want one every 5-10ms", len(gaps))
		}

		// Waiting longer, it backs off, up to MaxDelay.
		holdElsewhere(t, r, "long", 5*time.Second)
		r.times = nil
		_, err = l.Lock(t.Context(), "long", time.Second)
		wantNil(t, "Lock(long) held elsewhere for 5s", err)
		gaps = r.gaps()
		if last := gaps[len(gaps)-1]; last < 250*time.Millisecond || last > 500*time.Millisecond {
			t.Errorf("the last retry of a 5s wait waited %v; want within [250ms, 500ms]", last)
		}

		// DefaultRetry given polls as the default does; any other policy
		// the caller sets is kept as it is.
		holdElsewhere(t, r, "given", 240*time.Millisecond)
		r.times = nil
		_, err = l.Lock(t.Context(), "given", time.Second, lock.WithRetry(lock.DefaultRetry))
		wantNil(t, "Lock(given) with DefaultRetry given", err)
		if gaps := r.gaps(); len(gaps) < 24 {
			t.Errorf("%d retries in 240ms with DefaultRetry given; want one every 5-10ms, as without", len(gaps))
		}
		holdElsewhere(t, r, "other", 240*time.Millisecond)
		r.times = nil
		own := lock.DefaultRetry
		own.MaxDelay = 400 * time.Millisecond
		_, err = l.Lock(t.Context(), "other", time.Second, lock.WithRetry(own))
		wantNil(t, "Lock(other) with a policy of the caller's", err)
		if gaps := r.gaps(); len(gaps) > 6 {
			t.Errorf("%d retries in 240ms with a policy of the caller's; want it to back off from the start", len(gaps))
		}
	})
}

// queueOnly is a store that keeps a line (lock.Queuer) but cannot notify
// releases (no lock.Waiter); it cannot queue as configured here, so it
// answers errors.ErrUnsupported, as the Queuer contract allows.
type queueOnly struct{ *recording }

func (queueOnly) AcquireQueued(context.Context, lock.QueuedAcquisition) (uint64, error) {
	return 0, errors.ErrUnsupported
}

// A MultiLocker does not queue (only a SingleLocker does), so over stores
// that keep a line but cannot notify releases its Lock polls as over any
// store that cannot notify: every 5–10ms at first. It slept its backoff,
// taking the stores for ones that wake waiters.
func TestMultiOverQueueOnlyStoresPolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ls []lock.Store
		var rs []*recording
		for i := range 3 {
			r := &recording{basic: basic{memory.New(memory.WithName(fmt.Sprint("m", i)))}}
			holdElsewhere(t, r, "res", 240*time.Millisecond)
			r.times = nil
			rs, ls = append(rs, r), append(ls, queueOnly{r})
		}
		l := mustMulti(t, ls, nil)
		_, err := l.Lock(t.Context(), "res", time.Second)
		wantNil(t, "Lock(res) held elsewhere for 240ms", err)
		if gaps := rs[0].gaps(); len(gaps) < 24 {
			t.Errorf("%d retries in 240ms (%v); want one every 5-10ms", len(gaps), gaps)
		}
	})
}

// refusing is a store that refuses every acquisition as invalid input, as
// the etcd store does a TTL under its minimum.
type refusing struct{ basic }

func (refusing) Acquire(context.Context, string, string, time.Duration) error {
	return fmt.Errorf("%w: ttl below the store's minimum", lock.ErrInvalid)
}

// A store that refuses the request as invalid refuses it again: Lock
// reports ErrInvalid at once instead of retrying until its context ends;
// a Redlock does once those stores rule out the quorum.
func TestStoreInvalidIsFinal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour) // a retried refusal ends here
		defer cancel()
		single := mustSingle(t, refusing{basic{memory.New()}}, &lock.Options{NoFence: true})
		if _, err := single.Lock(ctx, "r", time.Second); !errors.Is(err, lock.ErrInvalid) || ctx.Err() != nil {
			t.Errorf("Lock on a store that refuses the request = %v; want ErrInvalid", err)
		}
		ok := basic{memory.New()}
		multi := mustMulti(t, []lock.Store{refusing{basic{memory.New()}}, refusing{basic{memory.New()}}, ok}, &lock.Options{NoFence: true})
		if _, err := multi.Lock(ctx, "r", time.Second); !errors.Is(err, lock.ErrInvalid) || ctx.Err() != nil {
			t.Errorf("Lock on a Redlock where 2 of 3 stores refuse the request = %v; want ErrInvalid", err)
		}
	})
}
