package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

func TestRunKeepsTheLockWhileTheFunctionRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCounting("c")
		l := mustSingle(t, c, nil)
		err := lock.Run(t.Context(), l, "res", 300*time.Millisecond, func(ctx context.Context, held lock.Lock) error {
			for range 30 { // 10× the TTL
				time.Sleep(100 * time.Millisecond)
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				if ok, _ := c.Exists(context.Background(), "res"); !ok {
					return errors.New("the lock lapsed while the function ran")
				}
			}
			return nil
		})
		wantNil(t, "Run(3s of work, 300ms TTL)", err)
		noResidue(t, c.Store)
		// No extension outlives the release.
		calls := c.calls.Load()
		time.Sleep(time.Second)
		if n := c.calls.Load(); n != calls {
			t.Errorf("%d store calls after Run returned; want none", n-calls)
		}
	})
}

func TestRunReportsLossWithinOneExtension(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		thief := mustSingle(t, m, nil)
		stolen := make(chan error, 1)
		go func() {
			time.Sleep(450 * time.Millisecond)
			m.Expire("res")
			_, err := thief.TryLock(context.Background(), "res", time.Hour)
			stolen <- err
		}()
		var cause error
		var lostAt time.Duration
		start := time.Now()
		err := lock.Run(t.Context(), l, "res", 300*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
			<-ctx.Done()
			lostAt, cause = time.Since(start), context.Cause(ctx)
			return nil
		})
		if !errors.Is(cause, lock.ErrLost) || !errors.Is(cause, lock.ErrNotHeld) {
			t.Fatalf("function context cause = %v; want ErrLost (the lock was not held)", cause)
		}
		// Extensions come every third of the validity, 300ms − 1% − 2ms.
		every := (300*time.Millisecond - 5*time.Millisecond) / 3
		if lostAt != 5*every {
			t.Errorf("loss reported %v after start; want %v, at the first extension after the loss", lostAt, 5*every)
		}
		wantIs(t, "Run() after losing its lock", err, lock.ErrLost)
		wantNil(t, "the new owner's TryLock(res)", <-stolen)
		if ok, _ := m.Exists(context.Background(), "res"); !ok {
			t.Fatal("the new owner's lock is gone: Run released a lock that was not its own")
		}
	})
}

// Run survives extensions that fail for a while and keeps the lock: a
// connection reset, and a store's error that wraps lock.ErrClosed, which
// is a store failure, not a shut locker.
func TestRunSurvivesTransientExtensionFailures(t *testing.T) {
	for _, failure := range []error{errConnReset, fmt.Errorf("store client closed: %w", lock.ErrClosed)} {
		t.Run(failure.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := memory.New()
				l := mustSingle(t, m, nil)
				m.Inject(memory.Fault{Ops: memory.OpExtend, Err: failure, Times: 2})
				err := lock.Run(t.Context(), l, "res", 300*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
					time.Sleep(time.Second)
					return context.Cause(ctx)
				})
				wantNil(t, "Run() with two extensions failing with "+failure.Error(), err)
				noResidue(t, m)
			})
		})
	}
}

func TestRunLosesLockWhenExtensionsFailPastValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		m.Inject(memory.Fault{Ops: memory.OpExtend, Err: errConnReset, Times: memory.Always})
		var held lock.Lock
		var lostAt time.Time
		err := lock.Run(t.Context(), l, "res", 300*time.Millisecond, func(ctx context.Context, h lock.Lock) error {
			held = h
			<-ctx.Done()
			lostAt = time.Now()
			return ctx.Err()
		})
		wantIs(t, "Run() while every extension fails", err, lock.ErrLost)
		if lostAt.After(held.ValidUntil.Add(time.Millisecond)) {
			t.Errorf("loss reported %v after the validity ran out; want by the end of validity", lostAt.Sub(held.ValidUntil))
		}
		m.ClearFaults()
	})
}

func TestRunReleasesOnPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v; want the function's panic to propagate", r)
			}
			noResidue(t, m)
		}()
		_ = lock.Run(t.Context(), l, "res", time.Second, func(context.Context, lock.Lock) error { panic("boom") })
	})
}

func TestRunMaxHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		start := time.Now()
		var cause error
		err := lock.Run(t.Context(), l, "res", 300*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err()
		}, lock.MaxHold(time.Second))
		if d := time.Since(start); d != time.Second {
			t.Errorf("function canceled after %v; want the 1s maximum hold", d)
		}
		if !errors.Is(cause, lock.ErrMaxHold) {
			t.Errorf("cause = %v; want ErrMaxHold", cause)
		}
		wantIs(t, "Run() past its maximum hold", err, lock.ErrMaxHold)
		noResidue(t, m)
	})
}

// A function that goes on past its hold limit until the lock has run
// out finds it not held at the release: Run reports the hold limit, not
// a failed release (as Term.Resign does).
func TestRunMaxHoldLockRunOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		err := lock.Run(t.Context(), l, "res", 300*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
			<-ctx.Done()
			time.Sleep(time.Second) // fake time: well past the lock's TTL
			return nil
		}, lock.MaxHold(time.Second))
		wantIs(t, "Run() held past its maximum hold until the lock ran out", err, lock.ErrMaxHold)
		if errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Run() = %v; want no ErrNotHeld: the lock was left to run out at the hold limit", err)
		}
		noResidue(t, m)
	})
}

// Run refuses a nil Locker, typed or not, before calling it.
func TestRunRefusesNilLocker(t *testing.T) {
	fn := func(context.Context, lock.Lock) error { return nil }
	for name, l := range map[string]lock.Locker{"nil": nil, "nil *SingleLocker": (*lock.SingleLocker)(nil), "nil *MultiLocker": (*lock.MultiLocker)(nil)} {
		wantIs(t, "Run("+name+")", lock.Run(t.Context(), l, "r", time.Second, fn), lock.ErrInvalid)
	}
}

func TestRunWithoutExtenderEndsAtValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, basic{m}, nil)
		var held lock.Lock
		var cause error
		var at time.Time
		err := lock.Run(t.Context(), l, "res", time.Second, func(ctx context.Context, h lock.Lock) error {
			held = h
			<-ctx.Done()
			at, cause = time.Now(), context.Cause(ctx)
			return nil
		})
		if !errors.Is(cause, lock.ErrLost) || !errors.Is(cause, errors.ErrUnsupported) {
			t.Fatalf("cause = %v; want ErrLost because the store cannot extend", cause)
		}
		if !at.Equal(held.ValidUntil) {
			t.Errorf("canceled at validity%+v; want exactly when the validity ran out", at.Sub(held.ValidUntil))
		}
		wantIs(t, "Run()", err, lock.ErrLost)
		noResidue(t, m)
	})
}

func TestRunReturnsFunctionError(t *testing.T) {
	m := memory.New()
	l := mustSingle(t, m, nil)
	errWork := errors.New("work failed")
	err := lock.Run(context.Background(), l, "res", time.Second, func(context.Context, lock.Lock) error { return errWork })
	if !errors.Is(err, errWork) || errors.Is(err, lock.ErrLost) {
		t.Fatalf("Run() = %v; want the function's error alone", err)
	}
	noResidue(t, m)
}

func TestRunNotAcquired(t *testing.T) {
	m := memory.New()
	holdElsewhere(t, m, "res", time.Minute)
	l := mustSingle(t, m, nil)
	ran := false
	err := lock.Run(context.Background(), l, "res", time.Second, func(context.Context, lock.Lock) error { ran = true; return nil }, lock.WithRetry(lock.NoRetry))
	wantIs(t, "Run() on a held resource", err, lock.ErrNotAcquired)
	if ran {
		t.Fatal("the function ran without the lock")
	}
}

func TestRunOnMultiLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms, ls := memStores(3)
		l := mustMulti(t, ls, nil)
		err := lock.Run(t.Context(), l, "res", 300*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
			time.Sleep(2 * time.Second)
			return context.Cause(ctx)
		})
		wantNil(t, "Run() on a multi-store locker", err)
		noResidue(t, ms...)
	})
}

// Run extends every third of the lock's validity, not of its TTL: with a
// coarse store (memcached counts whole seconds) a 1.5s lock is valid for
// less than 0.5s, so extending every 0.5s would lose it every time.
func TestRunExtendsWithinTheValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, coarse{m, time.Second}, nil)
		err := lock.Run(t.Context(), l, "res", 1500*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
			for range 30 {
				time.Sleep(100 * time.Millisecond)
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
			}
			return nil
		})
		wantNil(t, "Run(3s of work, 1.5s TTL, 1s granularity)", err)

		c := newCounting("c")
		l = mustSingle(t, coarse{c.Store, time.Second}, nil)
		err = lock.Run(t.Context(), l, "res", 1500*time.Millisecond, func(context.Context, lock.Lock) error { return nil }, lock.ExtendEvery(600*time.Millisecond))
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "validity") {
			t.Errorf("Run(1.5s TTL, 1s granularity, ExtendEvery 600ms) = %v; want ErrInvalid: the interval is not below the validity", err)
		}
		if n := c.calls.Load(); n != 0 {
			t.Errorf("the refused Run made %d store calls; want none", n)
		}
	})
}

// stalling is a memory store whose extensions hang for an hour, whatever
// their context says: a paused server behind a client that does not
// honour deadlines.
type stalling struct{ *memory.Store }

func (s stalling) Extend(context.Context, string, string, time.Duration) error {
	time.Sleep(time.Hour)
	return errConnReset
}

// When extensions stall, fn's context reports the loss from ValidUntil
// on, and its Done channel closes then: fn never runs past the validity
// believing it holds the lock.
func TestRunCancelsAtValidUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustSingle(t, stalling{memory.New()}, nil)
		var atValidUntil error
		err := lock.Run(t.Context(), l, "res", 300*time.Millisecond, func(ctx context.Context, held lock.Lock) error {
			time.Sleep(time.Until(held.ValidUntil))
			atValidUntil = ctx.Err()
			return nil
		})
		if atValidUntil == nil {
			t.Error("fn's ctx.Err() at ValidUntil = nil; want the loss")
		}
		wantIs(t, "Run() while extensions stall", err, lock.ErrLost)

		var doneAt, validUntil time.Time
		err = lock.Run(t.Context(), l, "other", 300*time.Millisecond, func(ctx context.Context, held lock.Lock) error {
			validUntil = held.ValidUntil
			<-ctx.Done()
			doneAt = time.Now()
			return nil
		})
		if !doneAt.Equal(validUntil) {
			t.Errorf("fn's context done at ValidUntil%+v; want at ValidUntil", doneAt.Sub(validUntil))
		}
		wantIs(t, "Run() while extensions stall", err, lock.ErrLost)
		time.Sleep(time.Hour) // the stalled extensions return
	})
}

// When extensions fail until the validity runs out, the loss cause keeps
// the store's own error, not only the deadline that ended the last try.
func TestRunLossKeepsTheStoreError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		m.Inject(memory.Fault{Ops: memory.OpExtend, Err: errConnReset, Times: memory.Always})
		var cause error
		err := lock.Run(t.Context(), l, "res", 300*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return nil
		})
		if !errors.Is(cause, lock.ErrLost) || !errors.Is(cause, errConnReset) {
			t.Errorf("cause = %v; want ErrLost keeping the store's error", cause)
		}
		if msg := cause.Error(); !strings.Contains(msg, "connection reset by peer") || strings.Count(msg, "lock") > 1 {
			t.Errorf("cause = %q; want the store's error, and the word lock once", msg)
		}
		wantIs(t, "Run()", err, errConnReset)
		m.ClearFaults()
	})
}

// FromContext gives fn the lock as of its latest extension: it stays
// valid while Run keeps it, where the Lock fn received goes stale.
func TestFromContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustSingle(t, memory.New(), nil)
		if _, ok := lock.FromContext(t.Context()); ok {
			t.Error("FromContext(a context not from Run) reports a lock")
		}
		err := lock.Run(t.Context(), l, "res", 300*time.Millisecond, func(ctx context.Context, first lock.Lock) error {
			for range 10 {
				time.Sleep(100 * time.Millisecond)
				cur, ok := lock.FromContext(ctx)
				if !ok || !cur.Valid() || cur.Token != first.Token || cur.Fence != first.Fence {
					t.Fatalf("FromContext(fn's ctx) = %+v, %v; want the lock, valid, with its token and fence", cur, ok)
				}
			}
			if first.Valid() {
				t.Error("the Lock fn received is still valid a second into a 300ms lock; the test shows nothing")
			}
			sub, cancel := context.WithCancel(ctx)
			defer cancel()
			if cur, ok := lock.FromContext(sub); !ok || !cur.Valid() {
				t.Errorf("FromContext(a context derived from fn's) = %+v, %v; want the lock", cur, ok)
			}
			return nil
		})
		wantNil(t, "Run()", err)
	})
}

// Once the lock's validity has run out, Run stops extending it, even if
// the function runs on: no store call is made in vain.
func TestRunStopsExtendingOnceTheValidityRanOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCounting("c")
		l := mustSingle(t, c, nil)
		c.Inject(memory.Fault{Ops: memory.OpExtend, Err: errConnReset, Times: memory.Always})
		var after int64
		err := lock.Run(t.Context(), l, "res", time.Second, func(ctx context.Context, _ lock.Lock) error {
			<-ctx.Done()
			synctest.Wait()
			calls := c.calls.Load()
			time.Sleep(10 * time.Second) // a function that does not stop at once
			after = c.calls.Load() - calls
			return nil
		})
		c.ClearFaults()
		if after != 0 {
			t.Errorf("%d store calls while the function ran on after the loss; want none", after)
		}
		wantIs(t, "Run()", err, lock.ErrLost)
	})
}

// slowLocker is a Locker of another package (a wrapper, as users write for
// metrics) whose Lock takes long after the lock was granted: the validity
// it leaves is shorter than the TTL says.
type slowLocker struct {
	lock.Locker
	after time.Duration
}

func (s slowLocker) Lock(ctx context.Context, resource string, ttl time.Duration, opts ...lock.LockOption) (lock.Lock, error) {
	l, err := s.Locker.Lock(ctx, resource, ttl, opts...)
	time.Sleep(s.after)
	return l, err
}

// Run over such a Locker cannot know the validity before it holds a lock:
// it refuses only an interval not shorter than the ttl (before anything
// is sent), and extends early when a slow acquisition left less validity
// than the interval, instead of refusing the interval once it holds the
// lock (an error that came and went with the machine's load).
func TestRunSlowForeignLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCounting("c")
		l := slowLocker{Locker: mustSingle(t, c, nil), after: 250 * time.Millisecond} // leaves ~45ms of 300
		err := lock.Run(t.Context(), l, "res", 300*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
			for range 10 { // 3× the TTL
				time.Sleep(100 * time.Millisecond)
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
			}
			return nil
		}, lock.ExtendEvery(100*time.Millisecond))
		if err != nil {
			t.Fatalf("Run over a slow wrapper with ExtendEvery 100ms of a 300ms TTL = %v; want nil", err)
		}
		before := c.calls.Load()
		err = lock.Run(t.Context(), l, "res", 300*time.Millisecond, func(context.Context, lock.Lock) error { return nil },
			lock.ExtendEvery(300*time.Millisecond))
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "ExtendEvery is 300ms") {
			t.Errorf("Run over a wrapper with ExtendEvery = the TTL: %v; want ErrInvalid naming ExtendEvery", err)
		}
		if c.calls.Load() != before {
			t.Errorf("Run with an invalid ExtendEvery sent %d acquisitions; want none", c.calls.Load()-before)
		}
	})
}

// A function that returns as its lock's validity runs out (no extension
// succeeded), without checking its context, held the lock to the end of
// its validity: Run and RunOnce report the loss, as the context's Err
// would have from ValidUntil on, whether or not the timer that ends the
// context has fired by then. (At that instant the timer's goroutine and
// the function's race: the loop makes the race's losing order certain to
// come up.)
func TestRunReportsAValidityThatRanOutAsFnReturned(t *testing.T) {
	for _, op := range []string{"Run", "RunOnce", "RunOnce/MinInterval"} {
		t.Run(op, func(t *testing.T) {
			for range 50 {
				synctest.Test(t, func(t *testing.T) {
					m := memory.New()
					m.Inject(memory.Fault{Ops: memory.OpExtend, Err: errors.New("connection reset"), Times: memory.Always})
					l := mustSingle(t, m, nil)
					fn := func(ctx context.Context, l lock.Lock) error {
						time.Sleep(time.Until(l.ValidUntil)) // no extension moved it
						return nil
					}
					var err error
					switch op {
					case "Run":
						err = lock.Run(t.Context(), l, "r", time.Second, fn)
					case "RunOnce":
						err = lock.RunOnce(t.Context(), l, "r", time.Second, fn)
					default:
						err = lock.RunOnce(t.Context(), l, "r", time.Second, fn, lock.MinInterval(time.Minute))
					}
					wantIs(t, op+"() whose function returned as the validity ran out", err, lock.ErrLost)
					m.ClearFaults()
					time.Sleep(time.Second)
					noResidue(t, m)
				})
			}
		})
	}
}

// A function that returns at its MaxHold has reached it, whether or not
// the timer that cancels its context has fired by then: its context's Err
// reports the end from that instant on, and Run, RunOnce and Lead report
// ErrMaxHold. (At that instant the timer's goroutine and the function
// race under synctest; the loop makes the losing order certain to come
// up.) The context keeps the hold limit as its deadline.
func TestMaxHoldReachedAtTheInstantIsReported(t *testing.T) {
	const maxHold = 2 * time.Second
	atTheLimit := func(t *testing.T, ctx context.Context) {
		time.Sleep(maxHold)
		if d, ok := ctx.Deadline(); !ok || !d.Equal(time.Now()) {
			t.Errorf("ctx.Deadline() at the MaxHold = %v, %v; want %v, true", d, ok, time.Now())
		}
		if ctx.Err() == nil {
			t.Errorf("ctx.Err() = nil at the MaxHold; want the context ended")
		}
	}
	for _, c := range []struct {
		name string
		call func(t *testing.T, l lock.Locker) error
	}{
		{"Run", func(t *testing.T, l lock.Locker) error {
			return lock.Run(t.Context(), l, "res", time.Second, func(ctx context.Context, _ lock.Lock) error {
				atTheLimit(t, ctx)
				return nil
			}, lock.MaxHold(maxHold))
		}},
		{"RunOnce", func(t *testing.T, l lock.Locker) error {
			return lock.RunOnce(t.Context(), l, "res", time.Second, func(ctx context.Context, _ lock.Lock) error {
				atTheLimit(t, ctx)
				return nil
			}, lock.MaxHold(maxHold))
		}},
		{"Lead", func(t *testing.T, l lock.Locker) error {
			e := mustElection(t, l, "res", time.Second, lock.MaxHold(maxHold))
			return e.Lead(t.Context(), func(ctx context.Context, term *lock.Term) error {
				atTheLimit(t, ctx)
				return nil
			})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for range 20 {
				synctest.Test(t, func(t *testing.T) {
					m := memory.New()
					wantIs(t, c.name+"(fn returning at the MaxHold)", c.call(t, mustSingle(t, m, nil)), lock.ErrMaxHold)
					noResidue(t, m)
				})
			}
		})
	}
}
