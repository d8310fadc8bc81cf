package memory_test

// Black-box checks of what the package's docs promise and the other tests
// do not cover: the operations each Op selects, the order faults apply
// in, Start's goroutine, Expire waking a waiter, and a lock set to expire
// sooner waking its waiters.

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Each Op selects the methods its doc names (and the permit methods name
// theirs): a fault for it fails them, and no other method.
func TestFaultOpsSelectTheirMethods(t *testing.T) {
	ctx := context.Background()
	type call struct {
		name string
		do   func(s *memory.Store) error
	}
	calls := map[memory.Op][]call{
		memory.OpAcquire: {
			{"Acquire", func(s *memory.Store) error { return s.Acquire(ctx, "r", "t", time.Minute) }},
			{"AcquireFenced", func(s *memory.Store) error { _, err := s.AcquireFenced(ctx, "r", "t", time.Minute); return err }},
			{"AcquirePermit", func(s *memory.Store) error { _, err := s.AcquirePermit(ctx, "p", "t", 2, time.Minute); return err }},
		},
		memory.OpRelease: {
			{"Release", func(s *memory.Store) error { return s.Release(ctx, "held", "h") }},
			{"ReleasePermit", func(s *memory.Store) error { return s.ReleasePermit(ctx, "permit", "h") }},
		},
		memory.OpExtend: {
			{"Extend", func(s *memory.Store) error { return s.Extend(ctx, "held", "h", time.Minute) }},
			{"ExtendPermit", func(s *memory.Store) error { return s.ExtendPermit(ctx, "permit", "h", time.Minute) }},
		},
		memory.OpExists: {
			{"Exists", func(s *memory.Store) error { _, err := s.Exists(ctx, "held"); return err }},
			{"Permits", func(s *memory.Store) error { _, err := s.Permits(ctx, "permit"); return err }},
		},
		memory.OpTTL: {
			{"TTL", func(s *memory.Store) error { _, _, err := s.TTL(ctx, "held"); return err }},
			{"Holder", func(s *memory.Store) error { _, _, err := s.Holder(ctx, "held"); return err }},
		},
		memory.OpWait: {
			{"WaitRelease", func(s *memory.Store) error { return s.WaitRelease(ctx, "free") }},
			{"WaitPermit", func(s *memory.Store) error { return s.WaitPermit(ctx, "free") }},
		},
		memory.OpRaiseFence: {
			{"RaiseFence", func(s *memory.Store) error { return s.RaiseFence(ctx, "r", 1) }},
		},
	}
	newStore := func(t *testing.T) *memory.Store {
		s := memory.New()
		if err := s.Acquire(ctx, "held", "h", time.Hour); err != nil {
			t.Fatalf("Acquire(held, h) = %v", err)
		}
		if _, err := s.AcquirePermit(ctx, "permit", "h", 2, time.Hour); err != nil {
			t.Fatalf("AcquirePermit(permit, h) = %v", err)
		}
		return s
	}
	for op, ofOp := range calls {
		for _, c := range ofOp {
			s := newStore(t)
			s.Inject(memory.Fault{Ops: op, Err: errReset, Times: memory.Always})
			if err := c.do(s); !errors.Is(err, errReset) {
				t.Errorf("%s with a fault injected for its Op (%d) = %v; want the injected error", c.name, op, err)
			}
			for other, ofOther := range calls {
				if other == op {
					continue
				}
				for _, o := range ofOther {
					s := newStore(t)
					s.Inject(memory.Fault{Ops: op, Err: errReset, Times: memory.Always})
					if err := o.do(s); errors.Is(err, errReset) {
						t.Errorf("%s with a fault injected for another Op (%d) = %v; want it unaffected", o.name, op, err)
					}
				}
			}
		}
	}
}

// A call takes the first fault that matches its operation and has calls
// left, in the order the faults were injected.
func TestFaultsApplyInOrderInjected(t *testing.T) {
	ctx := context.Background()
	errFirst, errSecond, errAll := errors.New("first"), errors.New("second"), errors.New("all")
	s := memory.New()
	s.Inject(memory.Fault{Ops: memory.OpRelease, Err: errFirst})
	s.Inject(memory.Fault{Ops: memory.OpRelease, Err: errSecond})
	s.Inject(memory.Fault{Err: errAll})
	if err := s.Acquire(ctx, "r", "t", time.Minute); !errors.Is(err, errAll) {
		t.Fatalf("Acquire(r, t) = %v; want %v, of the first fault that matches OpAcquire", err, errAll)
	}
	if err := s.Acquire(ctx, "r", "t", time.Minute); err != nil {
		t.Fatalf("Acquire(r, t) once the fault for all operations was spent = %v; want nil", err)
	}
	for _, want := range []error{errFirst, errSecond, nil} {
		if err := s.Release(ctx, "r", "t"); !errors.Is(err, want) {
			t.Fatalf("Release(r, t) = %v; want %v (faults in the order injected, each spent once)", err, want)
		}
	}
}

// Without faults Start calls done before it returns; while faults are
// injected it makes the call in a goroutine of its own, so that an
// injected delay holds up only the caller waiting for the answer.
func TestStartGoroutineOnlyWithFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.New()
		answered := false
		s.Start(t.Context(), lock.Call{Op: lock.CallAcquire, Resource: "r", Token: "a", TTL: time.Minute}, func(_ uint64, err error) {
			if err != nil {
				t.Errorf("Start(acquire r, a) = %v; want nil", err)
			}
			answered = true
		})
		if !answered {
			t.Fatal("Start(acquire r, a) without faults returned before calling done; want done called at once")
		}

		s.Inject(memory.Fault{Ops: memory.OpRelease, Delay: time.Second})
		start := time.Now()
		done := make(chan error, 1)
		s.Start(t.Context(), lock.Call{Op: lock.CallRelease, Resource: "r", Token: "a"}, func(_ uint64, err error) { done <- err })
		if since := time.Since(start); since != 0 {
			t.Fatalf("Start(release r, a) with a 1s delay injected returned after %v; want at once", since)
		}
		if err := <-done; err != nil || time.Since(start) != time.Second {
			t.Fatalf("Start(release r, a) with a 1s delay injected answered %v after %v; want nil after 1s", err, time.Since(start))
		}
	})
}

// Expire wakes the longest-waiting caller of WaitRelease, as a release
// does.
func TestExpireWakesAWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.New()
		if err := s.Acquire(t.Context(), "r", "a", time.Hour); err != nil {
			t.Fatalf("Acquire(r, a) = %v", err)
		}
		done := make(chan error, 1)
		go func() { done <- s.WaitRelease(t.Context(), "r") }()
		synctest.Wait()
		start := time.Now()
		if !s.Expire("r") {
			t.Fatal("Expire(r) = false while a holds r; want true")
		}
		if err := <-done; err != nil || time.Since(start) != 0 {
			t.Fatalf("WaitRelease(r) after Expire(r) = %v after %v; want nil at once", err, time.Since(start))
		}
	})
}

// A lock set to expire sooner than its waiters expect (extended for less)
// wakes them at its new expiry.
func TestWaitReleaseFollowsShorterExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.New()
		if err := s.Acquire(t.Context(), "r", "a", time.Hour); err != nil {
			t.Fatalf("Acquire(r, a) = %v", err)
		}
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- s.WaitRelease(t.Context(), "r") }()
		synctest.Wait()
		if err := s.Extend(t.Context(), "r", "a", time.Minute); err != nil {
			t.Fatalf("Extend(r, a, 1m) = %v", err)
		}
		if err := <-done; err != nil || time.Since(start) != time.Minute {
			t.Fatalf("WaitRelease(r) = %v after %v, the lock taken for 1h and extended for 1m; want nil after 1m", err, time.Since(start))
		}
	})
}
