package memory_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A delayed call whose context ends at the very instant its Delay passes
// proceeds, every time: the outcome of a test of the fake does not depend
// on which of two channels ready at once a select picks. (The race is
// rare, a few tries in a thousand under -race, so the test tries many
// times.)
func TestDelayEndingWithContextProceeds(t *testing.T) {
	for i := range 2000 {
		synctest.Test(t, func(t *testing.T) {
			s := memory.New()
			s.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Second})
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			err := s.Acquire(ctx, "r", "a", time.Minute)
			held, _ := s.Exists(t.Context(), "r")
			if err != nil || !held {
				t.Fatalf("try %d: Acquire(r, a) delayed 1s, its context ending after 1s = %v (held: %v); want nil, r held: the delay passed as the context ended", i, err, held)
			}
		})
		if t.Failed() {
			return
		}
	}
}

// "TTLs are exact" holds for permits too: a permit counts until the very
// nanosecond its TTL ends, a permit waiter wakes at that instant, and an
// expired permit is neither extended nor released. Fences go on
// increasing across permits, locks and a raise.
func TestDocPermitTTLsAreExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := memory.New()
		const ttl = 1500 * time.Nanosecond
		start := time.Now()
		first, err := s.AcquirePermit(ctx, "p", "a", 1, ttl)
		if err != nil {
			t.Fatalf("AcquirePermit(p, a, 1, %v) = %v", ttl, err)
		}
		woken := make(chan time.Duration, 1)
		go func() {
			if err := s.WaitPermit(ctx, "p"); err != nil {
				t.Errorf("WaitPermit(p) = %v; want nil", err)
			}
			woken <- time.Since(start)
		}()
		time.Sleep(ttl - time.Nanosecond)
		if n, err := s.Permits(ctx, "p"); n != 1 || err != nil {
			t.Errorf("Permits(p) 1ns before the TTL ends = %d, %v; want 1", n, err)
		}
		time.Sleep(time.Nanosecond)
		if n, err := s.Permits(ctx, "p"); n != 0 || err != nil {
			t.Errorf("Permits(p) as the TTL ends = %d, %v; want 0", n, err)
		}
		if err := s.ExtendPermit(ctx, "p", "a", time.Minute); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("ExtendPermit(p, a) as the TTL ends = %v; want ErrNotHeld", err)
		}
		if err := s.ReleasePermit(ctx, "p", "a"); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("ReleasePermit(p, a) as the TTL ends = %v; want ErrNotHeld", err)
		}
		if at := <-woken; at != ttl {
			t.Errorf("WaitPermit(p) returned %v after the permit was taken; want at its expiry, %v", at, ttl)
		}
		// The expired permit's limit no longer counts.
		second, err := s.AcquirePermit(ctx, "p", "b", 2, time.Minute)
		if err != nil || second <= first {
			t.Errorf("AcquirePermit(p, b, limit 2) once the permit of limit 1 expired = %d, %v; want nil and a fence above %d", second, err, first)
		}
		third, err := s.AcquireFenced(ctx, "p", "c", time.Minute)
		if err != nil || third <= second {
			t.Errorf("AcquireFenced(p, c) after a permit with fence %d = %d, %v; want a greater fence", second, third, err)
		}
		if err := s.RaiseFence(ctx, "p", 1000); err != nil {
			t.Fatalf("RaiseFence(p, 1000) = %v", err)
		}
		if f, err := s.AcquirePermit(ctx, "p", "d", 2, time.Minute); err != nil || f <= 1000 {
			t.Errorf("AcquirePermit(p, d) after RaiseFence(p, 1000) = %d, %v; want a fence above 1000", f, err)
		}
		if _, err := s.AcquirePermit(ctx, "p", "d", 2, time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("AcquirePermit(p, d) again while d holds one of 2 permits = %v; want ErrNotAcquired: one permit per token", err)
		}
	})
}

// Every kind of fault does to every call that changes something what
// Fault's doc says: Err fails it with no effect; AfterApply lets it take
// effect and fails it; a Delay its context does not outlast fails it with
// the context's error and no effect, unless InFlight is set, when it
// takes effect once the Delay has passed, with AfterApply too.
func TestFaultKindsOnEveryChange(t *testing.T) {
	errLost := errors.New("reply lost")
	nothing := func(context.Context, *memory.Store) error { return nil }
	lockR := func(ctx context.Context, s *memory.Store) error { return s.Acquire(ctx, "r", "a", time.Hour) }
	permitP := func(ctx context.Context, s *memory.Store) error {
		_, err := s.AcquirePermit(ctx, "p", "a", 2, time.Hour)
		return err
	}
	for _, c := range []struct {
		name    string
		op      memory.Op
		prepare func(ctx context.Context, s *memory.Store) error
		call    func(ctx context.Context, s *memory.Store) error
		took    func(ctx context.Context, s *memory.Store) (bool, error) // whether the call took effect, checked once any InFlight call landed
	}{
		{"Acquire(r, a, 1h)", memory.OpAcquire, nothing,
			func(ctx context.Context, s *memory.Store) error { return s.Acquire(ctx, "r", "a", time.Hour) },
			func(ctx context.Context, s *memory.Store) (bool, error) { return s.Exists(ctx, "r") }},
		{"Release(r, a)", memory.OpRelease, lockR,
			func(ctx context.Context, s *memory.Store) error { return s.Release(ctx, "r", "a") },
			func(ctx context.Context, s *memory.Store) (bool, error) {
				held, err := s.Exists(ctx, "r")
				return !held, err
			}},
		{"Extend(r, a, 2h)", memory.OpExtend, lockR,
			func(ctx context.Context, s *memory.Store) error { return s.Extend(ctx, "r", "a", 2*time.Hour) },
			func(ctx context.Context, s *memory.Store) (bool, error) {
				left, _, err := s.TTL(ctx, "r")
				return left > time.Hour, err
			}},
		{"RaiseFence(r, 500)", memory.OpRaiseFence, nothing,
			func(ctx context.Context, s *memory.Store) error { return s.RaiseFence(ctx, "r", 500) },
			func(ctx context.Context, s *memory.Store) (bool, error) {
				f, err := s.AcquireFenced(ctx, "r", "b", time.Minute)
				return f > 500, err
			}},
		{"AcquirePermit(p, a, 1h)", memory.OpAcquire, nothing,
			func(ctx context.Context, s *memory.Store) error {
				_, err := s.AcquirePermit(ctx, "p", "a", 2, time.Hour)
				return err
			},
			func(ctx context.Context, s *memory.Store) (bool, error) {
				n, err := s.Permits(ctx, "p")
				return n == 1, err
			}},
		{"ReleasePermit(p, a)", memory.OpRelease, permitP,
			func(ctx context.Context, s *memory.Store) error { return s.ReleasePermit(ctx, "p", "a") },
			func(ctx context.Context, s *memory.Store) (bool, error) {
				n, err := s.Permits(ctx, "p")
				return n == 0, err
			}},
		{"ExtendPermit(p, a, 2h)", memory.OpExtend, permitP,
			func(ctx context.Context, s *memory.Store) error { return s.ExtendPermit(ctx, "p", "a", 2*time.Hour) },
			func(ctx context.Context, s *memory.Store) (bool, error) {
				time.Sleep(time.Hour) // past the TTL it was taken for
				n, err := s.Permits(ctx, "p")
				return n == 1, err
			}},
	} {
		for _, k := range []struct {
			name  string
			fault memory.Fault
			want  error // what the call returns
			takes bool  // whether it takes effect
		}{
			{"Err", memory.Fault{Err: errLost}, errLost, false},
			{"Err with AfterApply", memory.Fault{Err: errLost, AfterApply: true}, errLost, true},
			{"a Delay past its deadline", memory.Fault{Delay: time.Second}, context.DeadlineExceeded, false},
			{"an InFlight Delay past its deadline", memory.Fault{Delay: time.Second, InFlight: true}, context.DeadlineExceeded, true},
			{"an InFlight Delay with Err and AfterApply past its deadline", memory.Fault{Delay: time.Second, InFlight: true, Err: errLost, AfterApply: true}, context.DeadlineExceeded, true},
			{"an InFlight Delay with Err past its deadline", memory.Fault{Delay: time.Second, InFlight: true, Err: errLost}, context.DeadlineExceeded, false},
		} {
			t.Run(c.name+" with "+k.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s := memory.New()
					if err := c.prepare(t.Context(), s); err != nil {
						t.Fatalf("preparing %s = %v", c.name, err)
					}
					f := k.fault
					f.Ops = c.op
					s.Inject(f)
					ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
					defer cancel()
					if err := c.call(ctx, s); !errors.Is(err, k.want) {
						t.Errorf("%s with %s = %v; want %v", c.name, k.name, err, k.want)
					}
					time.Sleep(2 * time.Second) // past any InFlight landing
					synctest.Wait()
					if took, err := c.took(t.Context(), s); err != nil || took != k.takes {
						t.Errorf("%s with %s: took effect = %v, %v; want %v", c.name, k.name, took, err, k.takes)
					}
				})
			})
		}
	}
}

// A waiter whose context ends as a release wakes it passes the wake on
// to the next in line, as WaitRelease's and WaitPermit's docs say: the
// release is not lost on a caller that no longer wants the lock. (The
// first waiter's context is canceled before the release, with neither
// having run since: its select has picked its context's end, and the
// release then wakes it, first in line.)
func TestWaitLeavingPassesTheWakeOn(t *testing.T) {
	for _, c := range []struct {
		name    string
		take    func(ctx context.Context, s *memory.Store) error
		wait    func(ctx context.Context, s *memory.Store) error
		release func(ctx context.Context, s *memory.Store) error
	}{
		{"WaitRelease",
			func(ctx context.Context, s *memory.Store) error { return s.Acquire(ctx, "r", "h", time.Hour) },
			func(ctx context.Context, s *memory.Store) error { return s.WaitRelease(ctx, "r") },
			func(ctx context.Context, s *memory.Store) error { return s.Release(ctx, "r", "h") }},
		{"WaitPermit",
			func(ctx context.Context, s *memory.Store) error {
				_, err := s.AcquirePermit(ctx, "r", "h", 1, time.Hour)
				return err
			},
			func(ctx context.Context, s *memory.Store) error { return s.WaitPermit(ctx, "r") },
			func(ctx context.Context, s *memory.Store) error { return s.ReleasePermit(ctx, "r", "h") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				s := memory.New()
				if err := c.take(ctx, s); err != nil {
					t.Fatalf("taking r under h = %v", err)
				}
				actx, cancelA := context.WithCancel(ctx)
				defer cancelA()
				a, b := make(chan error, 1), make(chan error, 1)
				go func() { a <- c.wait(actx, s) }()
				synctest.Wait() // a is first in line
				go func() { b <- c.wait(ctx, s) }()
				synctest.Wait()
				start := time.Now()
				cancelA()
				if err := c.release(ctx, s); err != nil {
					t.Fatalf("releasing r under h = %v", err)
				}
				if err := <-a; !errors.Is(err, context.Canceled) {
					t.Errorf("%s(r) of the first waiter, its context canceled = %v; want context.Canceled", c.name, err)
				}
				if err := <-b; err != nil || time.Since(start) != 0 {
					t.Errorf("%s(r) of the second waiter = %v after %v; want nil at once: the first passed the release's wake on", c.name, err, time.Since(start))
				}
			})
		})
	}
}

// Times counts the calls a fault affects: exactly that many, then none;
// a negative Times other than Always lasts until ClearFaults, as Always
// does.
func TestFaultTimes(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		times, affected int
	}{{0, 1}, {1, 1}, {3, 3}, {memory.Always, 10}, {-2, 10}} {
		s := memory.New()
		s.Inject(memory.Fault{Ops: memory.OpExists, Err: errReset, Times: c.times})
		n := 0
		for range 10 {
			if _, err := s.Exists(ctx, "r"); errors.Is(err, errReset) {
				n++
			}
		}
		if n != c.affected {
			t.Errorf("a fault with Times %d failed %d of 10 calls; want %d", c.times, n, c.affected)
		}
		s.ClearFaults()
		if _, err := s.Exists(ctx, "r"); err != nil {
			t.Errorf("Exists(r) after ClearFaults, the fault with Times %d injected = %v; want nil", c.times, err)
		}
	}
}
