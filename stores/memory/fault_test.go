package memory_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock/stores/memory"
)

// An InFlight call whose context ends returns at once, and takes effect
// when its delay has passed, as a request already sent does.
func TestInFlightLandsLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.New()
		s.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 10 * time.Millisecond, InFlight: true})
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		start := time.Now()
		err := s.Acquire(ctx, "r", "a", time.Minute)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Millisecond {
			t.Fatalf("Acquire(r, a) with an InFlight delay, ended after 1ms = %v after %v; want context.DeadlineExceeded after 1ms", err, time.Since(start))
		}
		if held, _ := s.Exists(t.Context(), "r"); held {
			t.Fatal("Exists(r) = true before the InFlight acquisition landed")
		}
		time.Sleep(10 * time.Millisecond)
		if held, _ := s.Exists(t.Context(), "r"); !held {
			t.Fatal("Exists(r) = false once the InFlight acquisition's delay passed; want true")
		}

		// Without its context ending, an InFlight call is a plain delay.
		s.Inject(memory.Fault{Ops: memory.OpRelease, Delay: 10 * time.Millisecond, InFlight: true})
		if err := s.Release(t.Context(), "r", "a"); err != nil || time.Since(start) != 21*time.Millisecond {
			t.Fatalf("Release(r, a) with an InFlight delay = %v after %v; want nil after 21ms", err, time.Since(start))
		}
	})
}

// An InFlight call whose fault has an Err (without AfterApply) is one the
// server refuses: when its context ends during the delay it returns the
// context's error and, as Fault.Err says, never takes effect.
func TestInFlightWithErrHasNoEffect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.New()
		errRefused := errors.New("refused")
		s.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 10 * time.Millisecond, InFlight: true, Err: errRefused})
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		if err := s.Acquire(ctx, "r", "a", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire(r, a) with an InFlight delay and an Err, ended after 1ms = %v; want context.DeadlineExceeded", err)
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if held, _ := s.Exists(t.Context(), "r"); held {
			t.Fatal("Exists(r) = true once the delay passed; want false: a call whose fault has an Err without AfterApply has no effect")
		}
	})
}

// A wait whose fault has AfterApply returns Err at once, without waiting
// for the release, as the Fault.AfterApply doc says.
func TestAfterApplyWaitReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.New()
		if err := s.Acquire(t.Context(), "r", "a", time.Hour); err != nil {
			t.Fatalf("Acquire(r, a) = %v", err)
		}
		errLost := errors.New("lost")
		s.Inject(memory.Fault{Ops: memory.OpWait, Err: errLost, AfterApply: true})
		start := time.Now()
		if err := s.WaitRelease(t.Context(), "r"); !errors.Is(err, errLost) || time.Since(start) != 0 {
			t.Fatalf("WaitRelease(r) with an AfterApply fault, r held for 1h = %v after %v; want the fault's error at once", err, time.Since(start))
		}
	})
}
