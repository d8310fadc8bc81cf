package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

func needsStarter(s lock.Store) string { return missing[lock.Starter](s, "lock.Starter") }

// start makes c through the store's Start and returns its outcome. It
// fails the rule if done is not called within the call's context, or is
// called more than once (checked when the rule ends).
func (h *harness) start(ctx context.Context, c lock.Call) error {
	h.t.Helper()
	answer := make(chan error, 1)
	var calls atomic.Int32
	h.store.(lock.Starter).Start(ctx, c, func(_ uint64, err error) {
		if calls.Add(1) == 1 {
			answer <- err
		}
	})
	h.t.Cleanup(func() {
		if n := calls.Load(); n > 1 {
			h.t.Errorf("Start(%v %s) called done %d times; want exactly once", c.Op, h.name(c.Resource), n)
		}
	})
	timer := time.NewTimer(35 * time.Second) // beyond h.ctx's bound
	defer timer.Stop()
	select {
	case err := <-answer:
		return err
	case <-timer.C:
		h.t.Fatalf("Start(%v %s): done not called 35s later; want it called by the context's deadline", c.Op, h.name(c.Resource))
		return nil
	}
}

// startOutcomes: every call made through Start has the outcome of the
// same call made through the blocking method.
func startOutcomes(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	call := func(op lock.CallOp, token string) lock.Call {
		return lock.Call{Op: op, Resource: r, Token: token, TTL: h.long}
	}
	h.must("Start(acquire r, a)", h.start(h.ctx(), call(lock.CallAcquire, a)))
	if !h.exists(r) {
		t.Fatal("Exists(r) = false after Start(acquire r, a) succeeded; want true")
	}
	h.want("Start(acquire r, b) while a holds r", h.start(h.ctx(), call(lock.CallAcquire, b)), lock.ErrNotAcquired)
	h.want("Start(acquire r, a) while a holds r (not re-entrant)", h.start(h.ctx(), call(lock.CallAcquire, a)), lock.ErrNotAcquired)
	if _, ok := h.store.(lock.Extender); ok {
		h.want("Start(extend r, b) while a holds r", h.start(h.ctx(), call(lock.CallExtend, b)), lock.ErrNotHeld)
		h.must("Start(extend r, a)", h.start(h.ctx(), call(lock.CallExtend, a)))
	} else if err := h.start(h.ctx(), call(lock.CallExtend, a)); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Start(extend r, a) on a store that cannot extend = %v; want errors.ErrUnsupported", errString(err))
	}
	h.want("Start(release r, b) while a holds r", h.start(h.ctx(), call(lock.CallRelease, b)), lock.ErrNotHeld)
	if !h.exists(r) {
		t.Fatal("Exists(r) = false after Start(release r, b) with the wrong token; want true")
	}
	h.must("Start(release r, a)", h.start(h.ctx(), call(lock.CallRelease, a)))
	if h.exists(r) {
		t.Fatal("Exists(r) = true after Start(release r, a); want false")
	}
	h.want("Start(release r, a) again", h.start(h.ctx(), call(lock.CallRelease, a)), lock.ErrNotHeld)
	if _, ok := h.store.(lock.Extender); ok {
		h.want("Start(extend r, a) once released", h.start(h.ctx(), call(lock.CallExtend, a)), lock.ErrNotHeld)
		if h.exists(r) {
			t.Fatal("Exists(r) = true after Start(extend r, a) of a released lock; want false: extension must not re-create a lock")
		}
	}
}

// startCanceled: a call started with a dead context reports the
// context's error, never a lock outcome.
func startCanceled(t *testing.T, h *harness) {
	held, free, holder, a := h.res("held"), h.res("free"), h.tok("holder"), h.tok("a")
	h.must("Acquire(held, holder)", h.store.Acquire(h.ctx(), held, holder, h.long))
	ctx, cancel := context.WithCancel(h.ctx())
	cancel()
	for _, c := range []lock.Call{
		{Op: lock.CallAcquire, Resource: held, Token: a, TTL: h.long},
		{Op: lock.CallAcquire, Resource: free, Token: a, TTL: h.long},
		{Op: lock.CallRelease, Resource: held, Token: a},
		{Op: lock.CallExtend, Resource: held, Token: a, TTL: h.long},
	} {
		if _, ok := h.store.(lock.Extender); !ok && c.Op == lock.CallExtend {
			continue
		}
		if err := h.start(ctx, c); !errors.Is(err, context.Canceled) {
			t.Errorf("Start(%v %s, a) with a canceled context = %v; want context.Canceled", c.Op, h.name(c.Resource), errString(err))
		}
	}
	if err := h.store.Release(h.ctx(), free, a); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(free, a) = %v; want nil or ErrNotHeld", err)
	}
	if !h.exists(held) {
		t.Error("Exists(held) = false after calls started with a canceled context; want true")
	}
	h.must("Release(held, holder)", h.store.Release(h.ctx(), held, holder))
}

// startConcurrent: calls started by many goroutines at once, on shared
// and distinct resources, each get exactly one answer, and exactly one
// contender wins each round.
func startConcurrent(t *testing.T, h *harness) {
	s := h.store.(lock.Starter)
	shared := h.res("shared")
	for round := range h.opts.Rounds {
		n := h.opts.Contenders
		type answer struct {
			i   int
			err error
		}
		answers := make(chan answer, 4*n)
		var calls atomic.Int32
		tokens := make([]string, n)
		for i := range tokens {
			tokens[i] = h.tok(fmt.Sprintf("c%d", i))
		}
		ctx := h.ctx()
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				own := h.res(fmt.Sprintf("own%d", i))
				for _, c := range []lock.Call{
					{Op: lock.CallAcquire, Resource: shared, Token: tokens[i], TTL: h.long},
					{Op: lock.CallAcquire, Resource: own, Token: tokens[i], TTL: h.long},
				} {
					s.Start(ctx, c, func(_ uint64, err error) {
						calls.Add(1)
						answers <- answer{i, err}
					})
				}
			}()
		}
		wg.Wait()
		var winners []int
		for range 2 * n {
			var a answer
			select {
			case a = <-answers:
			case <-time.After(35 * time.Second):
				t.Fatalf("round %d: %d of %d started calls answered after 35s; want every one", round, calls.Load(), 2*n)
			}
			switch {
			case a.err == nil:
				winners = append(winners, a.i)
			case !errors.Is(a.err, lock.ErrNotAcquired):
				t.Fatalf("round %d: Start(acquire, c%d) = %v; want nil or ErrNotAcquired", round, a.i, a.err)
			}
		}
		// n grants on the contenders' own resources, one on the shared one.
		if len(winners) != n+1 {
			t.Fatalf("round %d: %d of %d started acquisitions succeeded; want %d (every own resource, and the shared one once)", round, len(winners), 2*n, n+1)
		}
		for i := range n {
			h.must(fmt.Sprintf("round %d: Release(own%d, c%d)", round, i, i), h.store.Release(h.ctx(), h.res(fmt.Sprintf("own%d", i)), tokens[i]))
		}
		released := 0
		for i := range n {
			if err := h.store.Release(h.ctx(), shared, tokens[i]); err == nil {
				released++
			}
		}
		if released != 1 {
			t.Fatalf("round %d: the shared resource was released by %d of the contenders' tokens; want exactly 1", round, released)
		}
		if c := calls.Load(); c != int32(2*n) {
			t.Fatalf("round %d: done called %d times for %d started calls; want once each", round, c, 2*n)
		}
	}
}
