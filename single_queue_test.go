package lock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
	"github.com/lockkit/lock/tokengen"
)

// eventsOf returns the events of kind k that h kept, in order.
func eventsOf(h *eventLog, k lock.EventKind) []lock.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []lock.Event
	for _, e := range h.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// A Lock whose first attempt waits in its store's line reports, in its
// last event, how long after the call began it returned: it counted from
// no attempt at all, and reported the time since the process started.
func TestSingleQueuedFirstAttemptDuration(t *testing.T) {
	for _, handed := range []bool{true, false} {
		name := "handed over"
		if !handed {
			name = "canceled in line"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				s := &lineStore{Store: memory.New()}
				holder := mustSingle(t, s, nil)
				var log eventLog
				l := mustSingle(t, s, &lock.Options{Hook: &log})
				h, err := holder.Lock(ctx, "r", time.Minute)
				wantNil(t, "Lock() by the holder", err)
				done := make(chan error)
				go func() {
					_, err := l.Lock(ctx, "r", time.Second)
					done <- err
				}()
				time.Sleep(50 * time.Millisecond)
				kind := lock.EventAcquired
				if handed {
					wantNil(t, "Unlock() by the holder", holder.Unlock(ctx, h))
					wantNil(t, "Lock() handed the lock in line", <-done)
				} else {
					cancel()
					wantIs(t, "Lock() canceled in line", <-done, context.Canceled)
					kind = lock.EventNotAcquired
				}
				if s.calls.Load() == 0 {
					t.Fatal("Lock did not queue (no AcquireQueued call)")
				}
				evs := eventsOf(&log, kind)
				if len(evs) != 1 {
					t.Fatalf("%d %v events; want 1", len(evs), kind)
				}
				if d := evs[0].Duration; d != 50*time.Millisecond {
					t.Errorf("%v event after 50ms in line: Duration = %v; want 50ms", kind, d)
				}
			})
		})
	}
}

// A SingleLocker over a store that keeps a line (lock.Queuer) but cannot
// notify releases (no lock.Waiter) waits as over any store that cannot
// notify once it cannot queue: when the store reports
// errors.ErrUnsupported, or when its tokens are fixed. Its default policy
// then polls every 5–10ms at first, and its hook hears of sleeps, not of
// waits for a release. It slept its backoff and told of waits for a
// release of up to the TTL.
func TestSingleQueuerWithoutWaiterPolls(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		name := "store cannot queue"
		if fixed {
			name = "fixed tokens"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &recording{basic: basic{memory.New()}}
				holdElsewhere(t, r, "res", 240*time.Millisecond)
				r.times = nil
				var log eventLog
				o := &lock.Options{Hook: &log}
				if fixed {
					o.Tokens = tokengen.Fixed("f")
				}
				l := mustSingle(t, queueOnly{r}, o)
				_, err := l.Lock(t.Context(), "res", time.Second)
				wantNil(t, "Lock(res) held elsewhere for 240ms", err)
				if gaps := r.gaps(); len(gaps) < 24 {
					t.Errorf("%d retries in 240ms (%v); want one every 5-10ms", len(gaps), gaps)
				}
				for _, e := range eventsOf(&log, lock.EventRetry) {
					if e.Waiting || e.Delay > 10*time.Millisecond {
						t.Fatalf("EventRetry{Waiting: %v, Delay: %v} over a store that cannot notify; want a sleep of 5-10ms", e.Waiting, e.Delay)
					}
				}
			})
		})
	}
}

// A queued attempt that gets in line counts as two (an attempt that found
// the resource held, then the one handed the lock or not), so Lock makes
// one only while two attempts are left: Retry.Attempts counts every
// attempt, the hook's included. Retry{Attempts: 3} made four.
func TestSingleQueuedAttemptsCounted(t *testing.T) {
	for _, attempts := range []int{2, 3, 4, 5} {
		t.Run(fmt.Sprint(attempts), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &lineStore{Store: memory.New()}
				holdElsewhere(t, s, "r", time.Hour)
				var log eventLog
				l := mustSingle(t, s, &lock.Options{Hook: &log})
				_, err := l.Lock(t.Context(), "r", 100*time.Millisecond, lock.WithRetry(lock.Retry{Attempts: attempts, Delay: time.Millisecond}))
				wantIs(t, "Lock() of a resource held for an hour", err, lock.ErrNotAcquired)
				if s.calls.Load() == 0 {
					t.Fatal("Lock did not queue (no AcquireQueued call)")
				}
				if n := len(eventsOf(&log, lock.EventAttempt)); n != attempts {
					t.Errorf("Retry{Attempts: %d}: %d EventAttempt; want %d", attempts, n, attempts)
				}
				if got := eventsOf(&log, lock.EventNotAcquired); len(got) != 1 || got[0].Attempt != attempts {
					t.Errorf("Retry{Attempts: %d}: EventNotAcquired %+v; want one, with Attempt %d", attempts, got, attempts)
				}
				for _, e := range eventsOf(&log, lock.EventRetry) {
					if e.Attempt >= attempts {
						t.Errorf("Retry{Attempts: %d}: EventRetry before attempt %d; want none after the last", attempts, e.Attempt+1)
					}
				}
			})
		})
	}
}

// shutOnRetry is a hook that shuts its locker down at the first
// EventRetry that tells of a wait, and keeps every event.
type shutOnRetry struct {
	eventLog
	locker *lock.SingleLocker
	once   sync.Once
}

func (h *shutOnRetry) Observe(ctx context.Context, e lock.Event) {
	h.eventLog.Observe(ctx, e)
	if e.Kind == lock.EventRetry && e.Waiting && e.Attempt > 1 {
		h.once.Do(func() { _ = h.locker.Shutdown(context.WithoutCancel(ctx)) })
	}
}

// A Lock that Shutdown ends before its next queued attempt tells the hook
// it failed after the attempts it made: it counted one more. (A policy of
// many attempts: one that retries Forever stays in line, see
// TestForeverQueuedWaitOutlastsTTL.)
func TestSingleQueuedShutdownAttemptsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &lineStore{Store: memory.New()}
		holdElsewhere(t, s, "r", time.Hour)
		h := &shutOnRetry{}
		h.locker = mustSingle(t, s, &lock.Options{Hook: h})
		_, err := h.locker.Lock(t.Context(), "r", 100*time.Millisecond, lock.WithRetry(lock.Retry{Attempts: 100, Delay: time.Millisecond}))
		wantIs(t, "Lock() ended by Shutdown", err, lock.ErrClosed)
		made := len(eventsOf(&h.eventLog, lock.EventAttempt))
		if got := eventsOf(&h.eventLog, lock.EventNotAcquired); len(got) != 1 || got[0].Attempt != made {
			t.Errorf("EventNotAcquired %+v after %d EventAttempt; want one, with Attempt %d", got, made, made)
		}
	})
}
