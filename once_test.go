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
