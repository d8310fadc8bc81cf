package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// The rules of lock.Waiter.

// waitLimit is how long after a release a WaitRelease must have returned.
const waitLimit = 5 * time.Second

func waitFree(t *testing.T, h *harness) {
	w := h.store.(lock.Waiter)
	ctx, cancel := context.WithTimeout(h.ctx(), h.expiryBound(h.ttl))
	defer cancel()
	h.must("WaitRelease(r) of a free resource", w.WaitRelease(ctx, h.res("r")))
}

// startWait runs WaitRelease in a goroutine and returns its result channel.
func startWait(h *harness, ctx context.Context, r string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- h.store.(lock.Waiter).WaitRelease(ctx, r) }()
	return done
}

// awaitWait waits for a WaitRelease started with startWait to return nil
// within limit.
func awaitWait(t *testing.T, done <-chan error, limit time.Duration, what string) {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitRelease(r) %s = %v; want nil", what, err)
		}
	case <-timer.C:
		t.Fatalf("WaitRelease(r) still blocked %v %s; want it to return nil", limit, what)
	}
}

// stillWaiting fails the rule if a WaitRelease started with startWait has
// returned.
func stillWaiting(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("WaitRelease(r) returned %v %s; want it to block until r is released", errString(err), what)
	default:
	}
}

func waitWakesOnRelease(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	done := startWait(h, h.ctx(), r)
	h.settle()
	stillWaiting(t, done, "while a holds r")
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	awaitWait(t, done, waitLimit+h.opts.Tolerance, "after Release(r, a)")
}

func waitIgnoresOtherResources(t *testing.T, h *harness) {
	r, other, a, b := h.res("r"), h.res("other"), h.tok("a"), h.tok("b")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	h.must("Acquire(other, b)", h.store.Acquire(h.ctx(), other, b, h.long))
	done := startWait(h, h.ctx(), r)
	h.settle()
	stillWaiting(t, done, "while a holds r")
	h.must("Release(other, b)", h.store.Release(h.ctx(), other, b))
	h.settle()
	stillWaiting(t, done, "after Release(other, b), while a still holds r: it woke for another resource's release")
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	awaitWait(t, done, waitLimit+h.opts.Tolerance, "after Release(r, a)")
}

// waitIgnoresExtend: the holder extends its lock, for as long and for
// less, while WaitRelease waits; the wait must go on until the release.
func waitIgnoresExtend(t *testing.T, h *harness) {
	ext := h.store.(lock.Extender)
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	done := startWait(h, h.ctx(), r)
	h.settle()
	stillWaiting(t, done, "while a holds r")
	for _, ttl := range []time.Duration{h.long, h.long / 2} {
		call := fmt.Sprintf("Extend(r, a, %v)", ttl)
		h.must(call, ext.Extend(h.ctx(), r, a, ttl))
		h.settle()
		stillWaiting(t, done, "after "+call+", while a still holds r: it woke for an extension")
	}
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	awaitWait(t, done, waitLimit+h.opts.Tolerance, "after Release(r, a)")
}

func waitWakesOnExpiry(t *testing.T, h *harness) {
	r := h.res("r")
	start := time.Now()
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, h.tok("a"), h.ttl))
	done := startWait(h, h.ctx(), r)
	awaitWait(t, done, time.Until(start.Add(h.expiryBound(h.ttl)+h.opts.Tolerance)), fmt.Sprintf("after a lock with ttl %v expired", h.ttl))
}

func waitHonoursContext(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a)", h.releasing(r, a, h.store.Acquire(h.ctx(), r, a, h.long)))
	ctx, cancel := context.WithTimeout(h.ctx(), 50*time.Millisecond)
	defer cancel()
	done := startWait(h, ctx, r)
	timer := time.NewTimer(50*time.Millisecond + waitLimit)
	defer timer.Stop()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitRelease(r) with a 50ms context while r is held = %v; want context.DeadlineExceeded", errString(err))
		}
	case <-timer.C:
		t.Fatal("WaitRelease(r) still blocked 5s after its context ended; want it to return context.DeadlineExceeded")
	}
}

// waitReleaseRace releases many resources each within two milliseconds of
// a WaitRelease beginning on it: every wait must return, none may miss
// its release and sleep on until the lock's TTL.
func waitReleaseRace(t *testing.T, h *harness) {
	n := 4 * h.opts.Contenders
	var missed, wrong atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		r, a := h.res(fmt.Sprint("r", i)), h.tok("a")
		h.must(fmt.Sprintf("Acquire(r%d, a)", i), h.store.Acquire(h.ctx(), r, a, h.long))
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(h.ctx(), waitLimit+h.opts.Tolerance)
			defer cancel()
			done := startWait(h, ctx, r)
			time.Sleep(rand.N(2 * time.Millisecond))
			if err := h.store.Release(h.ctx(), r, a); err != nil {
				t.Errorf("Release(r%d, a) = %v; want nil", i, err)
			}
			switch err := <-done; {
			case errors.Is(err, context.DeadlineExceeded):
				missed.Add(1)
			case err != nil:
				wrong.Add(1)
				t.Errorf("WaitRelease(r%d) = %v; want nil once r%d is released", i, err, i)
			}
		}()
	}
	wg.Wait()
	if m := missed.Load(); m > 0 {
		t.Fatalf("WaitRelease(r) still blocked %v after Release(r) for %d of %d resources, each released within 2ms of the wait beginning; want every wait to return: a release as the wait began was missed",
			waitLimit+h.opts.Tolerance, m, n)
	}
}

// checkWaitBlocks fails the rule at once if WaitRelease returns nil while
// the resource is held: the lockers, trusting it, would retry at once and
// spin (under Synctest, for ever: the fake clock stands still while they
// spin), and the rule would hang instead of failing.
func (h *harness) checkWaitBlocks() {
	h.t.Helper()
	w, ok := h.store.(lock.Waiter)
	if !ok {
		return
	}
	r, a := h.res("wait-probe"), h.tok("a")
	h.must("Acquire(wait-probe, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	ctx, cancel := context.WithTimeout(h.ctx(), 10*time.Millisecond)
	defer cancel()
	if err := w.WaitRelease(ctx, r); err == nil {
		h.t.Fatal("WaitRelease(wait-probe) = nil while a holds wait-probe; want it to block: the lockers would retry at once, and spin (see rule WaitWakesOnRelease); the locker rules stop here")
	}
	h.must("Release(wait-probe, a)", h.store.Release(h.ctx(), r, a))
}

// waitAfterGone: a WaitRelease that begins once the lock is gone — it
// was released, or it expired without a release — returns at once. A
// store that learns of a lock's end by a notification alone, and reads
// the record an expired lock leaves until something deletes it as a lock,
// misses an end that came before the wait began.
func waitAfterGone(t *testing.T, h *harness) {
	w := h.store.(lock.Waiter)
	check := func(r, when string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(h.ctx(), h.expiryBound(h.ttl))
		defer cancel()
		if err := w.WaitRelease(ctx, r); err != nil {
			t.Fatalf("WaitRelease(r) %s = %v; want nil at once: r is free", when, err)
		}
	}
	r, a := h.res("released"), h.tok("a")
	h.must("Acquire(released, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	h.must("Release(released, a)", h.store.Release(h.ctx(), r, a))
	check(r, "begun after Release(r, a)")

	r = h.res("expired")
	h.must(fmt.Sprintf("Acquire(expired, a, %v)", h.ttl), h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.waitExpired(r, time.Now(), h.ttl)
	check(r, fmt.Sprintf("begun after the lock (ttl %v) expired, never released, once Exists(r) said so", h.ttl))
}
