package lock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/brokenstore"
	"github.com/lockkit/lock/stores/memory"
)

func TestRunOnceSkipsWhileAnotherRunsTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		a, b := mustSingle(t, m, nil), mustSingle(t, m, nil)
		ctx := t.Context()
		started, finish := make(chan struct{}), make(chan struct{})
		done := make(chan error)
		go func() {
			done <- lock.RunOnce(ctx, a, "report", time.Second, func(ctx context.Context, _ lock.Lock) error {
				close(started)
				<-finish
				return nil
			})
		}()
		<-started
		ran := false
		err := lock.RunOnce(ctx, b, "report", time.Second, func(context.Context, lock.Lock) error {
			ran = true
			return nil
		}, lock.WithRetry(lock.DefaultRetry)) // ignored: one attempt
		wantIs(t, "RunOnce() while another runs the job", err, lock.ErrSkipped)
		wantIs(t, "RunOnce() while another runs the job", err, lock.ErrNotAcquired)
		if ran {
			t.Error("the skipped job ran")
		}
		const want = `runonce "report": skipped: another caller runs the job or ran it within its minimum interval`
		if err.Error() != want {
			t.Errorf("error = %q; want %q", err, want)
		}
		close(finish)
		wantNil(t, "the first RunOnce()", <-done)
		noResidue(t, m)
	})
}

func TestRunOnceStoreFailureIsNotASkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errors.New("connection reset")})
		err := lock.RunOnce(t.Context(), mustSingle(t, m, nil), "report", time.Second, func(context.Context, lock.Lock) error {
			t.Error("the job ran without its lock")
			return nil
		})
		wantIs(t, "RunOnce() on a failing store", err, lock.ErrUnavailable)
		if errors.Is(err, lock.ErrSkipped) || errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("RunOnce() on a failing store = %v; want no skip", err)
		}
	})
}

// With MinInterval, the job's lock is kept until the interval has passed
// since the run began; without it, the next replica runs the job as soon
// as the first finished.
func TestRunOnceMinInterval(t *testing.T) {
	for _, interval := range []time.Duration{0, 30 * time.Second} {
		t.Run(interval.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := memory.New()
				ctx := t.Context()
				var mu sync.Mutex
				var runs []time.Duration
				start := time.Now()
				job := func(context.Context, lock.Lock) error {
					mu.Lock()
					runs = append(runs, time.Since(start))
					mu.Unlock()
					time.Sleep(10 * time.Second)
					return nil
				}
				// Replicas fire every 4s; the job takes 10s.
				var wg sync.WaitGroup
				for tick := range 12 {
					replica := mustSingle(t, m, nil)
					wg.Go(func() {
						err := lock.RunOnce(ctx, replica, "report", time.Second, job, lock.MinInterval(interval))
						if err != nil && !errors.Is(err, lock.ErrSkipped) {
							t.Errorf("tick %d: RunOnce() = %v", tick, err)
						}
					})
					time.Sleep(4 * time.Second)
				}
				wg.Wait()
				// The first tick after each run's end runs the job again.
				want := []time.Duration{0, 12 * time.Second, 24 * time.Second, 36 * time.Second}
				if interval > 0 {
					// The lock is kept 30s from each run's start.
					want = []time.Duration{0, 32 * time.Second}
				}
				if !slices.Equal(runs, want) {
					t.Errorf("runs at %v; want %v", runs, want)
				}
				time.Sleep(interval)
				noResidue(t, m)
			})
		})
	}
}

// A job that takes longer than the interval releases its lock at once.
func TestRunOnceIntervalShorterThanTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		err := lock.RunOnce(t.Context(), mustSingle(t, m, nil), "report", time.Second, func(context.Context, lock.Lock) error {
			time.Sleep(2 * time.Second)
			return nil
		}, lock.MinInterval(time.Second))
		wantNil(t, "RunOnce()", err)
		noResidue(t, m)
	})
}

// An interval that cannot be kept is reported with the job's result.
func TestRunOnceReportsAnIntervalNotKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		err := lock.RunOnce(t.Context(), mustSingle(t, m, nil), "report", time.Second, func(context.Context, lock.Lock) error {
			m.Inject(memory.Fault{Ops: memory.OpExtend, Err: errors.New("connection reset")})
			return nil
		}, lock.MinInterval(time.Minute))
		wantIs(t, "RunOnce() whose final extension failed", err, lock.ErrUnavailable)
		time.Sleep(time.Second)
		noResidue(t, m)
	})
}

func TestRunOnceRefusesBadInput(t *testing.T) {
	l := mustSingle(t, memory.New(), nil)
	fn := func(context.Context, lock.Lock) error { return nil }
	var nilCtx context.Context
	for name, err := range map[string]error{
		"negative MinInterval": lock.RunOnce(t.Context(), l, "r", time.Second, fn, lock.MinInterval(-time.Second)),
		"MinInterval > MaxTTL": lock.RunOnce(t.Context(), l, "r", time.Second, fn, lock.MinInterval(lock.MaxTTL+1)),
		"nil function":         lock.RunOnce(t.Context(), l, "r", time.Second, nil),
		"nil locker":           lock.RunOnce(t.Context(), nil, "r", time.Second, fn),
		"nil *SingleLocker":    lock.RunOnce(t.Context(), (*lock.SingleLocker)(nil), "r", time.Second, fn),
		"nil context":          lock.RunOnce(nilCtx, l, "r", time.Second, fn),
		"zero ttl":             lock.RunOnce(t.Context(), l, "r", 0, fn),
	} {
		wantIs(t, "RunOnce("+name+")", err, lock.ErrInvalid)
	}
}

// Every replica runs the job on its schedule; one runs it, the others
// skip it. MinInterval keeps the lock an hour from the run's start, so a
// replica whose schedule fires a little later skips it too.
func ExampleRunOnce() {
	ctx := context.Background()
	store := memory.New() // one store shared by every replica
	job := func(ctx context.Context, l lock.Lock) error {
		fmt.Println("building the nightly report")
		return nil
	}
	for replica := range 3 {
		locker, _ := lock.NewSingle(store, nil)
		err := lock.RunOnce(ctx, locker, "nightly-report", time.Minute, job, lock.MinInterval(time.Hour))
		if errors.Is(err, lock.ErrSkipped) {
			fmt.Printf("replica %d: skipped\n", replica)
			continue
		}
		fmt.Printf("replica %d: %v\n", replica, err)
	}
	// Output:
	// building the nightly report
	// replica 0: <nil>
	// replica 1: skipped
	// replica 2: skipped
}

// MaxHold bounds how long the lock is kept for the job while it runs;
// MinInterval then keeps it, with nobody acting under it, to the
// interval's end, however much longer than MaxHold that is: a job that
// returned before the hold limit, and one that the limit ended, are both
// skipped by the other replicas until the interval's end.
func TestRunOnceMinIntervalBeyondMaxHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  func(ctx context.Context) error
		want error // the cause RunOnce reports, if any
	}{
		{"returned before MaxHold", func(context.Context) error { time.Sleep(time.Second); return nil }, nil},
		{"ended by MaxHold", func(ctx context.Context) error { <-ctx.Done(); return nil }, lock.ErrMaxHold},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := memory.New()
				a, b := mustSingle(t, m, nil), mustSingle(t, m, nil)
				ctx := t.Context()
				start := time.Now()
				var jobCtx context.Context
				err := lock.RunOnce(ctx, a, "job", time.Second, func(ctx context.Context, _ lock.Lock) error {
					jobCtx = ctx
					return tc.job(ctx)
				}, lock.MaxHold(2*time.Second), lock.MinInterval(10*time.Second))
				if tc.want == nil {
					wantNil(t, "RunOnce()", err)
				} else {
					wantIs(t, "RunOnce()", err, tc.want)
				}
				if l, _ := lock.FromContext(jobCtx); l.Valid() {
					t.Errorf("FromContext(job's ctx) after RunOnce = %+v, valid; want the lock no longer the job's", l)
				}
				time.Sleep(5*time.Second - time.Since(start))
				err = lock.RunOnce(ctx, b, "job", time.Second, func(context.Context, lock.Lock) error { return nil })
				wantIs(t, "RunOnce() 5s after the run began, past MaxHold, within MinInterval", err, lock.ErrSkipped)
				time.Sleep(10*time.Second - time.Since(start))
				wantNil(t, "RunOnce() at the interval's end", lock.RunOnce(ctx, b, "job", time.Second, func(context.Context, lock.Lock) error { return nil }))
				noResidue(t, m)
			})
		})
	}
}

// A job that outlived MaxHold and its lock, which the hold limit left to
// run out, returns before MinInterval's end: the lock cannot be kept, and
// RunOnce reports the hold limit, as Run does; the extension that finds
// the lock run out is no further error (ErrNotHeld), as Run's release is
// not.
func TestRunOnceMaxHoldOutlivedThenMinInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		err := lock.RunOnce(t.Context(), l, "job", time.Second, func(ctx context.Context, _ lock.Lock) error {
			<-ctx.Done()
			time.Sleep(3 * time.Second) // ignores its context, past the lock's TTL
			return nil
		}, lock.MaxHold(2*time.Second), lock.MinInterval(10*time.Second))
		wantIs(t, "RunOnce()", err, lock.ErrMaxHold)
		if errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("RunOnce() whose job outlived MaxHold and its lock = %v; want no ErrNotHeld, as Run reports none", err)
		}
		noResidue(t, m)
	})
}

// A job that panics still ran: MinInterval keeps its lock to the
// interval's end, and the panic goes on to RunOnce's caller.
func TestRunOnceMinIntervalAfterPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		a, b := mustSingle(t, m, nil), mustSingle(t, m, nil)
		ctx := t.Context()
		start := time.Now()
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("RunOnce of a panicking job returned; want the panic")
				}
			}()
			_ = lock.RunOnce(ctx, a, "job", time.Second, func(context.Context, lock.Lock) error {
				panic("job failed")
			}, lock.MinInterval(10*time.Second))
		}()
		time.Sleep(5*time.Second - time.Since(start))
		err := lock.RunOnce(ctx, b, "job", time.Second, func(context.Context, lock.Lock) error { return nil })
		wantIs(t, "RunOnce() 5s after a run whose job panicked, within MinInterval", err, lock.ErrSkipped)
		time.Sleep(10*time.Second - time.Since(start))
		wantNil(t, "RunOnce() at the interval's end", lock.RunOnce(ctx, b, "job", time.Second, func(context.Context, lock.Lock) error { return nil }))
		noResidue(t, m)
	})
}

// The extension that keeps the interval is bounded by the TTL, as Run's
// release is: a store that does not answer it holds RunOnce up for the
// TTL, not for the rest of the interval.
func TestRunOnceIntervalExtensionBoundedByTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		var returned time.Time
		err := lock.RunOnce(t.Context(), mustSingle(t, m, nil), "report", time.Second, func(context.Context, lock.Lock) error {
			m.Inject(memory.Fault{Ops: memory.OpExtend, Delay: 24 * time.Hour})
			returned = time.Now()
			return nil
		}, lock.MinInterval(time.Hour))
		if took := time.Since(returned); took > time.Second {
			t.Errorf("RunOnce() = %v %v after its job returned, with a store not answering the extension; want at most the TTL (1s)", err, took)
		}
		wantIs(t, "RunOnce() whose final extension was not answered", err, lock.ErrUnavailable)
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("RunOnce() = %v; want no match for context.DeadlineExceeded: the caller's context did not end", err)
		}
	})
}

// On a store whose expiry is coarse (memcached's whole seconds), the last
// stretch of a MinInterval, shorter than the granularity, is kept too:
// the lock is not released when fn returns less than a granularity
// before the interval's end, and no replica runs the job again within
// the interval.
func TestRunOnceMinIntervalOnACoarseStore(t *testing.T) {
	for _, semaphore := range []bool{false, true} {
		t.Run(fmt.Sprint("semaphore=", semaphore), func(t *testing.T) { runOnceMinIntervalOnACoarseStore(t, semaphore) })
	}
}

func runOnceMinIntervalOnACoarseStore(t *testing.T, semaphore bool) {
	synctest.Test(t, func(t *testing.T) {
		s := brokenstore.Coarse(time.Second)
		var a, b lock.Locker = mustSingle(t, s, nil), mustSingle(t, s, nil)
		if semaphore {
			a, _ = lock.NewSemaphore(a, 1)
			b, _ = lock.NewSemaphore(b, 1)
		}
		ctx := t.Context()
		start := time.Now()
		err := lock.RunOnce(ctx, a, "report", 5*time.Second, func(context.Context, lock.Lock) error {
			time.Sleep(2500 * time.Millisecond)
			return nil
		}, lock.MinInterval(3*time.Second))
		wantNil(t, "RunOnce()", err)
		for _, at := range []time.Duration{2600 * time.Millisecond, 2900 * time.Millisecond} {
			time.Sleep(time.Until(start.Add(at)))
			err := lock.RunOnce(ctx, b, "report", 5*time.Second, func(context.Context, lock.Lock) error {
				t.Errorf("the job ran again %v after the first run began, within its MinInterval of 3s", at)
				return nil
			})
			wantIs(t, fmt.Sprintf("RunOnce() %v into the interval", at), err, lock.ErrSkipped)
		}
		time.Sleep(5 * time.Second)
	})
}
