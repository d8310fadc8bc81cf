package memory_test

// Black-box review of the memory store as a test fake, against its docs.

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

var errReset = errors.New("connection reset")

func TestContractFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := memory.New()
		// Times 0 affects one call; the call has no effect.
		s.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errReset})
		if err := s.Acquire(ctx, "r", "t", time.Second); !errors.Is(err, errReset) {
			t.Errorf("Acquire with a fault = %v; want the injected error", err)
		}
		if ok, _ := s.Exists(ctx, "r"); ok {
			t.Errorf("a failed Acquire took effect")
		}
		if err := s.Acquire(ctx, "r", "t", time.Second); err != nil {
			t.Errorf("second Acquire = %v; want the fault spent", err)
		}
		// Ops zero: every operation.
		s.Inject(memory.Fault{Err: errReset, Times: 2})
		if _, err := s.Exists(ctx, "r"); !errors.Is(err, errReset) {
			t.Errorf("Exists with Ops 0 = %v", err)
		}
		if err := s.Release(ctx, "r", "t"); !errors.Is(err, errReset) {
			t.Errorf("Release with Ops 0 = %v", err)
		}
		if ok, _ := s.Exists(ctx, "r"); !ok {
			t.Errorf("a failed Release took effect")
		}
		// AfterApply: takes effect and fails.
		s.Inject(memory.Fault{Ops: memory.OpRelease, Err: errReset, AfterApply: true})
		if err := s.Release(ctx, "r", "t"); !errors.Is(err, errReset) {
			t.Errorf("Release with AfterApply = %v", err)
		}
		if ok, _ := s.Exists(ctx, "r"); ok {
			t.Errorf("AfterApply Release did not take effect")
		}
		// Delay: a context ending during it returns its error, no effect.
		s.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Second})
		dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		err := s.Acquire(dctx, "r", "t", time.Minute)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("delayed Acquire past its deadline = %v; want DeadlineExceeded", err)
		}
		time.Sleep(2 * time.Second)
		if ok, _ := s.Exists(ctx, "r"); ok {
			t.Errorf("delayed Acquire whose context ended took effect (InFlight not set)")
		}
		// Delay that completes: the call proceeds.
		s.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Second})
		start := time.Now()
		if err := s.Acquire(ctx, "r", "t", time.Minute); err != nil || time.Since(start) != time.Second {
			t.Errorf("delayed Acquire = %v after %v; want nil after 1s", err, time.Since(start))
		}
		// InFlight: returns at once, lands later.
		s.Inject(memory.Fault{Ops: memory.OpRelease, Delay: time.Second, InFlight: true})
		dctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
		err = s.Release(dctx, "r", "t")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("in-flight Release = %v; want DeadlineExceeded", err)
		}
		if ok, _ := s.Exists(ctx, "r"); !ok {
			t.Errorf("in-flight Release landed before its delay")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if ok, _ := s.Exists(ctx, "r"); ok {
			t.Errorf("in-flight Release never landed")
		}
		// Always until ClearFaults.
		s.Inject(memory.Fault{Ops: memory.OpExists, Err: errReset, Times: memory.Always})
		for range 5 {
			if _, err := s.Exists(ctx, "r"); !errors.Is(err, errReset) {
				t.Errorf("Exists with Always = %v", err)
			}
		}
		s.ClearFaults()
		if _, err := s.Exists(ctx, "r"); err != nil {
			t.Errorf("Exists after ClearFaults = %v", err)
		}
	})
}

func TestContractExpireResourcesTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := memory.New(memory.WithName("fake"))
		if s.String() != "fake" || memory.New().String() != "memory" {
			t.Errorf("String() = %q / %q", s.String(), memory.New().String())
		}
		if got := memory.New(nil, memory.WithName("")).String(); got != "memory" {
			t.Errorf(`New(nil, WithName("")).String() = %q; want "memory" (nil options ignored, an empty name keeps the default)`, got)
		}
		for _, r := range []string{"c", "a", "b"} {
			if err := s.Acquire(ctx, r, "t", time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if got := s.Resources(); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("Resources() = %q; want sorted a b c", got)
		}
		if !s.Expire("b") || s.Expire("b") || s.Expire("zzz") {
			t.Errorf("Expire reports wrongly whether the resource was held")
		}
		if got := s.Resources(); !slices.Equal(got, []string{"a", "c"}) {
			t.Errorf("Resources() after Expire(b) = %q", got)
		}
		if err := s.Extend(ctx, "b", "t", time.Minute); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Extend(expired) = %v; want ErrNotHeld", err)
		}
		time.Sleep(20 * time.Second)
		if d, ok, err := s.TTL(ctx, "a"); d != 40*time.Second || !ok || err != nil {
			t.Errorf("TTL(a) = %v, %v, %v; want exactly 40s", d, ok, err)
		}
		time.Sleep(40 * time.Second)
		if got := s.Resources(); len(got) != 0 {
			t.Errorf("Resources() after the TTL = %q; want none", got)
		}
		if _, ok, _ := s.TTL(ctx, "a"); ok {
			t.Errorf("TTL(expired) reports held")
		}
		// Permits.
		for i, tok := range []string{"p1", "p2"} {
			if _, err := s.AcquirePermit(ctx, "pool", tok, 2, time.Minute); err != nil {
				t.Fatalf("AcquirePermit %d = %v", i, err)
			}
		}
		if _, err := s.AcquirePermit(ctx, "pool", "p3", 2, time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("third permit of 2 = %v; want ErrNotAcquired", err)
		}
		if _, err := s.AcquirePermit(ctx, "pool", "p3", 3, time.Minute); !errors.Is(err, lock.ErrLimitMismatch) {
			t.Errorf("permit with another limit = %v; want ErrLimitMismatch", err)
		}
		if ok, _ := s.Exists(ctx, "pool"); ok {
			t.Errorf("permits and locks share a namespace")
		}
		if n := s.ExpirePermits("pool"); n != 2 {
			t.Errorf("ExpirePermits = %d; want 2", n)
		}
		if n, _ := s.Permits(ctx, "pool"); n != 0 {
			t.Errorf("Permits after ExpirePermits = %d", n)
		}
		if got := s.Resources(); len(got) != 0 {
			t.Errorf("Resources() = %q", got)
		}
	})
}

func TestContractWaitReleaseOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := memory.New()
		if err := s.Acquire(ctx, "r", "t", time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitRelease(ctx, "free"); err != nil {
			t.Errorf("WaitRelease(free) = %v", err)
		}
		woke := make(chan int, 3)
		for i := range 3 {
			go func() {
				if err := s.WaitRelease(ctx, "r"); err != nil {
					t.Errorf("WaitRelease = %v", err)
				}
				woke <- i
			}()
			synctest.Wait()
		}
		if err := s.Release(ctx, "r", "t"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if len(woke) != 1 || <-woke != 0 {
			t.Errorf("a release woke %d waiters (or not the first); want the longest-waiting one", len(woke)+1)
		}
		// Expiry wakes a waiter too.
		if err := s.Acquire(ctx, "e", "t", time.Minute); err != nil {
			t.Fatal(err)
		}
		ew := make(chan time.Time, 1)
		start := time.Now()
		go func() { _ = s.WaitRelease(ctx, "e"); ew <- time.Now() }()
		if got := <-ew; got.Sub(start) != time.Minute {
			t.Errorf("waiter woke %v after a 1m lock was taken; want at its expiry", got.Sub(start))
		}
		// Canceled waiter returns the context's error.
		if err := s.Acquire(ctx, "x", "t", time.Hour); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := s.WaitRelease(cctx, "x"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("WaitRelease past its deadline = %v", err)
		}
		s.Expire("r")
		s.Expire("x")
		synctest.Wait()
		for len(woke) > 0 {
			<-woke
		}
		time.Sleep(time.Hour)
	})
}
