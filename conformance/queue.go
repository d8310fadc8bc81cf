package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// The rules of lock.Queuer: AcquireQueued takes a free lock at once, or
// gets in line, calls Queued, and is handed the lock by the release (or
// the expiry) of the lock held, in the order the callers got in line; it
// leaves the line when its Wait runs out or its context ends. A store
// that answers errors.ErrUnsupported, having sent nothing, does not queue
// as configured, and the rules skip.

// shortWait is the Wait of a queued acquisition whose wait must run out.
const shortWait = 100 * time.Millisecond

// queueCall is an AcquireQueued running in a goroutine.
type queueCall struct {
	h      *harness
	what   string // the call, for messages: "AcquireQueued(r, b)"
	a      lock.QueuedAcquisition
	began  time.Time
	queued chan struct{} // closed by the first call of Queued
	calls  atomic.Int32  // how many times Queued was called
	done   chan struct{} // closed once the call returned
	ended  time.Time     // when it returned
	fence  uint64
	err    error
}

// startQueued runs AcquireQueued(ctx, a) in a goroutine; what names the
// call in messages. a.Queued is set to one that records its calls.
func (h *harness) startQueued(ctx context.Context, what string, a lock.QueuedAcquisition) *queueCall {
	c := &queueCall{h: h, what: what, queued: make(chan struct{}), done: make(chan struct{})}
	a.Queued = func() {
		if c.calls.Add(1) == 1 {
			close(c.queued)
		}
	}
	c.a = a
	c.began = time.Now()
	go func() {
		defer close(c.done)
		c.fence, c.err = h.store.(lock.Queuer).AcquireQueued(ctx, a)
		c.ended = time.Now()
	}()
	return c
}

// returned handles the result of a call that has returned: it skips the
// rule if the store does not queue as configured, and fails it if Queued
// was called more than once.
func (c *queueCall) returned() {
	h := c.h
	h.t.Helper()
	if errors.Is(c.err, errors.ErrUnsupported) {
		// A store that cannot queue sends nothing: the call took no lock.
		if err := h.store.Release(h.ctx(), c.a.Resource, c.a.Token); !errors.Is(err, lock.ErrNotHeld) {
			h.t.Fatalf("%s = %v, and then Release(%s, its token) = %s; want ErrNotHeld: a store that cannot queue must send nothing, yet the call took the lock",
				c.what, c.err, h.name(c.a.Resource), errString(err))
		}
		h.t.Skipf("the store does not queue acquisitions as configured: %s = %v", c.what, c.err)
	}
	if n := c.calls.Load(); n > 1 {
		h.t.Fatalf("%s called Queued %d times; want at most once", c.what, n)
	}
}

// inLine waits for the call to call Queued, as it must once it found the
// resource held (while says how) and got in line.
func (c *queueCall) inLine(while string) {
	h := c.h
	h.t.Helper()
	limit := waitLimit + h.opts.Tolerance
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-c.queued:
	case <-c.done:
		c.returned()
		select {
		case <-c.queued:
			h.t.Fatalf("%s = %s %s, having called Queued; want it to wait in line", c.what, c.result(), while)
		default:
			h.t.Fatalf("%s = %s %s, without calling Queued; want it to get in line, call Queued and wait", c.what, c.result(), while)
		}
	case <-timer.C:
		h.t.Fatalf("%s has not called Queued %v after it began %s; want it to get in line and call Queued", c.what, limit, while)
	}
}

// waiting fails the rule if the call has returned; while says when.
func (c *queueCall) waiting(while string) {
	h := c.h
	h.t.Helper()
	select {
	case <-c.done:
		c.returned()
		h.t.Fatalf("%s = %s %s; want it to wait in line", c.what, c.result(), while)
	default:
	}
}

// await waits up to limit for the call to return, and returns its error;
// if it has not returned by then, the rule fails with stuck.
func (c *queueCall) await(limit time.Duration, stuck string) error {
	h := c.h
	h.t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
		h.t.Fatalf("%s still waiting %v %s", c.what, limit.Round(time.Millisecond), stuck)
	}
	c.returned()
	return c.err
}

// result renders what the call returned.
func (c *queueCall) result() string {
	if c.err != nil {
		return c.err.Error()
	}
	return fmt.Sprintf("fence %d, nil", c.fence)
}

// queueWaits is a QueuedAcquisition of r under token that waits long.
func (h *harness) queueWaits(r, token string) lock.QueuedAcquisition {
	return lock.QueuedAcquisition{Resource: r, Token: token, TTL: h.long, Wait: h.long}
}

// queueBehind takes r under a and returns AcquireQueued(r, b), waiting in
// line behind a.
func (h *harness) queueBehind(r, a, b string) *queueCall {
	h.t.Helper()
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	c := h.startQueued(h.ctx(), "AcquireQueued(r, b)", h.queueWaits(r, b))
	c.inLine("while a holds r")
	h.settle()
	c.waiting("while a holds r")
	return c
}

func queueFree(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	c := h.startQueued(h.ctx(), "AcquireQueued(r, a)", h.queueWaits(r, a))
	h.must(c.what+" of a free resource", c.await(waitLimit+h.opts.Tolerance, "of a free resource; want it to take r at once"))
	if c.calls.Load() > 0 {
		t.Fatalf("%s of a free resource called Queued; want it to take r at once, without getting in line", c.what)
	}
	h.want("Acquire(r, b) while a holds r, taken by AcquireQueued", h.store.Acquire(h.ctx(), r, h.tok("b"), h.long), lock.ErrNotAcquired)
	h.must("Release(r, a) once AcquireQueued(r, a) returned nil", h.store.Release(h.ctx(), r, a))
	if h.exists(r) {
		t.Fatal("Exists(r) = true after Release(r, a); want false")
	}

	if _, ok := h.store.(lock.Fencer); !ok {
		return
	}
	fenced, fs := h.res("fenced"), &fences{h: h}
	x := fs.acquire("AcquireFenced(fenced, x)", fenced, h.long, 0)
	h.must("Release(fenced, x)", h.store.Release(h.ctx(), fenced, x))
	qa := h.queueWaits(fenced, h.tok("y"))
	qa.Fenced = true
	c = h.startQueued(h.ctx(), "AcquireQueued(fenced, y, fenced)", qa)
	h.must(c.what+" of a free resource", c.await(waitLimit+h.opts.Tolerance, "of a free resource; want it to take fenced at once"))
	fs.check(c.what+" after AcquireFenced(fenced, x) and Release(fenced, x)", c.fence, 0)
	h.must("Release(fenced, y)", h.store.Release(h.ctx(), fenced, qa.Token))
	fs.acquire("AcquireFenced(fenced, z) after AcquireQueued(fenced, y, fenced) and Release(fenced, y)", fenced, h.long, 0)
}

// queueNoWait: a Wait of 0 or less is one attempt, as Acquire makes.
func queueNoWait(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	for _, wait := range []time.Duration{0, -time.Second} {
		qa := h.queueWaits(r, h.tok("b"))
		qa.Wait = wait
		c := h.startQueued(h.ctx(), fmt.Sprintf("AcquireQueued(r, b, wait %v)", wait), qa)
		err := c.await(waitLimit+h.opts.Tolerance, "while a holds r; want one attempt, ErrNotAcquired at once: a wait of 0 or less never waits")
		h.want(c.what+" while a holds r", err, lock.ErrNotAcquired)
		if c.calls.Load() > 0 {
			t.Fatalf("%s while a holds r called Queued; want one attempt, never in line", c.what)
		}
	}
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	if h.exists(r) {
		t.Fatal("Exists(r) = true after Release(r, a), though the only other acquisitions of r were AcquireQueued with a wait of 0 or less, refused; want false: they got in line, and r was handed to callers that had left")
	}
	qa := h.queueWaits(r, h.tok("c"))
	qa.Wait = 0
	c := h.startQueued(h.ctx(), "AcquireQueued(r, c, wait 0s)", qa)
	h.must(c.what+" of a free resource", c.await(waitLimit+h.opts.Tolerance, "of a free resource; want it to take r at once"))
	h.must("Release(r, c) once "+c.what+" returned nil", h.store.Release(h.ctx(), r, qa.Token))
}

func queueHandoff(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	c := h.queueBehind(r, a, b)
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	h.must(c.what+" after Release(r, a)", c.await(waitLimit+h.opts.Tolerance, "after Release(r, a); want r handed to it"))
	h.want("Acquire(r, c) while b holds r, handed it by Release(r, a)", h.store.Acquire(h.ctx(), r, h.tok("c"), h.long), lock.ErrNotAcquired)
	h.must("Release(r, b) once AcquireQueued(r, b) returned nil: b must hold r", h.store.Release(h.ctx(), r, b))
	if h.exists(r) {
		t.Fatal("Exists(r) = true after Release(r, b); want false")
	}
}

// queueNoBarging: a release hands the lock to the first in line at once;
// a caller that asks after the release finds it held.
func queueNoBarging(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	c := h.queueBehind(r, a, b)
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	if err := h.store.Acquire(h.ctx(), r, h.tok("c"), h.long); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire(r, c) right after Release(r, a), with b in line = %s; want ErrNotAcquired: the release hands r to b, and a caller that asks later must not take it first", errString(err))
	}
	h.must(c.what+" after Release(r, a)", c.await(waitLimit+h.opts.Tolerance, "after Release(r, a); want r handed to it"))
	h.must("Release(r, b) once AcquireQueued(r, b) returned nil: b must hold r", h.store.Release(h.ctx(), r, b))
}

func queueOrder(t *testing.T, h *harness) {
	r, a, b, c := h.res("r"), h.tok("a"), h.tok("b"), h.tok("c")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	first := h.startQueued(h.ctx(), "AcquireQueued(r, b)", h.queueWaits(r, b))
	first.inLine("while a holds r")
	second := h.startQueued(h.ctx(), "AcquireQueued(r, c)", h.queueWaits(r, c))
	second.inLine("while a holds r, with b in line")
	h.settle()
	first.waiting("while a holds r")
	second.waiting("while a holds r")
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	limit := waitLimit + h.opts.Tolerance
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-first.done:
	case <-second.done:
		second.returned()
		if second.err == nil {
			t.Fatal("AcquireQueued(r, c) = nil after Release(r, a), while AcquireQueued(r, b), in line before it, waits on; want r handed to b first: acquisitions are served in the order they got in line")
		}
		t.Fatalf("AcquireQueued(r, c) = %v after Release(r, a); want it to wait in line behind b", second.err)
	case <-timer.C:
		t.Fatalf("AcquireQueued(r, b) still waiting %v after Release(r, a), with b first in line; want r handed to it", limit)
	}
	first.returned()
	h.must("AcquireQueued(r, b) after Release(r, a)", first.err)
	h.settle()
	second.waiting("while b holds r, handed it by Release(r, a)")
	h.must("Release(r, b) once AcquireQueued(r, b) returned nil", h.store.Release(h.ctx(), r, b))
	h.must("AcquireQueued(r, c) after Release(r, b)", second.await(limit, "after Release(r, b); want r handed to it"))
	h.must("Release(r, c) once AcquireQueued(r, c) returned nil: c must hold r", h.store.Release(h.ctx(), r, c))
	if h.exists(r) {
		t.Fatal("Exists(r) = true after Release(r, c); want false")
	}
}

func queueWaitRunsOut(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	qa := h.queueWaits(r, b)
	qa.Wait = shortWait
	c := h.startQueued(h.ctx(), fmt.Sprintf("AcquireQueued(r, b, wait %v)", shortWait), qa)
	c.inLine("while a holds r")
	err := c.await(shortWait+waitLimit+h.opts.Tolerance, fmt.Sprintf("while a holds r; want ErrNotAcquired once its wait of %v runs out", shortWait))
	h.want(c.what+" while a holds r", err, lock.ErrNotAcquired)
	if took := c.ended.Sub(c.began); took < shortWait {
		t.Fatalf("%s = ErrNotAcquired %v after it began; want it to wait its wait of %v in line first", c.what, took, shortWait)
	}
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	if h.exists(r) {
		t.Fatalf("Exists(r) = true after Release(r, a), though %s had returned ErrNotAcquired; want false: the lock was handed to a caller that had left the line", c.what)
	}
}

func queueAfterExpiry(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	start := time.Now()
	h.must(fmt.Sprintf("Acquire(r, a, %v)", h.ttl), h.store.Acquire(h.ctx(), r, a, h.ttl))
	qa := h.queueWaits(r, b)
	qa.TTL = h.ttl
	c := h.startQueued(h.ctx(), fmt.Sprintf("AcquireQueued(r, b, %v)", h.ttl), qa)
	limit := time.Until(start.Add(h.expiryBound(h.ttl) + h.opts.Tolerance))
	h.must(c.what+" while a's lock expires", h.releasing(r, b, c.await(limit, fmt.Sprintf("after it began; want r handed to it once a's lock (ttl %v) expired", h.ttl))))
	// a's lock lives its TTL less the granularity from when it was sent, at least.
	expires := start.Add(h.ttl - h.gran)
	if c.ended.Before(expires) {
		t.Fatalf("%s = nil %v after Acquire(r, a, %v) was sent (granularity %v); want it to wait until a's lock expires: r was handed over while a held it",
			c.what, c.ended.Sub(start).Round(time.Millisecond), h.ttl, h.gran)
	}
	h.want("Acquire(r, c) while b holds r, handed it when a's lock expired", h.store.Acquire(h.ctx(), r, h.tok("c"), h.long), lock.ErrNotAcquired)
	// The handoff came no earlier than a's lock could expire, and b's
	// lock lives its TTL from the handoff.
	held, after, err := h.lasts(r, expires, h.ttl)
	h.must("Exists(r)", err)
	if !held {
		t.Fatalf("Exists(r) = false %v after a's lock could first expire and be handed to b with ttl %v (granularity %v); want true: a handed lock's TTL counts from the handoff, not from the call",
			after.Round(time.Millisecond), h.ttl, h.gran)
	}
}

func queueHonoursContext(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	ctx, cancel := context.WithCancel(h.ctx())
	defer cancel()
	c := h.startQueued(ctx, "AcquireQueued(r, b)", h.queueWaits(r, b))
	c.inLine("while a holds r")
	cancel()
	err := c.await(waitLimit+h.opts.Tolerance, "after its context was canceled; want it to return context.Canceled")
	if errors.Is(err, lock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("%s whose context was canceled while in line = %s; want context.Canceled, not an outcome", c.what, errString(err))
	}
	// What the lockers do: release by the token, whose outcome is unknown.
	if err := h.store.Release(h.ctx(), r, b); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release(r, b) once %s returned context.Canceled = %v; want nil or ErrNotHeld", c.what, err)
	}
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	if !h.freed(r, waitLimit+h.opts.Tolerance) {
		t.Fatalf("Exists(r) = true %v after Release(r, a), though %s had returned context.Canceled and Release(r, b) was made; want false: the lock went to a caller that had left, and stays held until its TTL runs out",
			waitLimit+h.opts.Tolerance, c.what)
	}
	tc := h.tok("c")
	h.must("Acquire(r, c) once r is free", h.releasing(r, tc, h.store.Acquire(h.ctx(), r, tc, h.long)))
}

// freed polls Exists until resource is free, for up to limit, and
// reports whether it was.
func (h *harness) freed(resource string, limit time.Duration) bool {
	h.t.Helper()
	end := time.Now().Add(limit)
	for h.exists(resource) {
		if !time.Now().Before(end) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// queueFencesIncrease: a lock handed over in line, on a release or on
// expiry, carries a fence above its previous holder's.
func queueFencesIncrease(t *testing.T, h *harness) {
	r, fs := h.res("r"), &fences{h: h}
	a := fs.acquire("AcquireFenced(r, a)", r, h.long, 0)

	qb := h.queueWaits(r, h.tok("b"))
	qb.TTL, qb.Fenced = h.ttl, true
	b := h.startQueued(h.ctx(), fmt.Sprintf("AcquireQueued(r, b, %v, fenced)", h.ttl), qb)
	b.inLine("while a holds r")
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	h.must(b.what+" after Release(r, a)", b.await(waitLimit+h.opts.Tolerance, "after Release(r, a); want r handed to it"))
	fs.check(b.what+" handed r by Release(r, a)", b.fence, 0)

	qc := h.queueWaits(r, h.tok("c"))
	qc.Fenced = true
	c := h.startQueued(h.ctx(), "AcquireQueued(r, c, fenced)", qc)
	limit := time.Until(b.ended.Add(h.expiryBound(h.ttl) + h.opts.Tolerance))
	h.must(c.what+" while b's lock expires", c.await(limit, fmt.Sprintf("after it began; want r handed to it once b's lock (ttl %v) expired", h.ttl)))
	fs.check(c.what+" handed r when b's lock expired", c.fence, 0)
	h.must("Release(r, c)", h.store.Release(h.ctx(), r, qc.Token))
	fs.acquire("AcquireFenced(r, d) after Release(r, c)", r, h.long, 0)
}

// queueNilQueued: Queued is called only if set. An acquisition without
// one gets in line, waits, and is handed the lock, as one with it is.
func queueNilQueued(t *testing.T, h *harness) {
	q := h.store.(lock.Queuer)
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	qa := h.queueWaits(r, b) // Queued is nil
	const what = "AcquireQueued(r, b) with a nil Queued"
	type result struct {
		fence    uint64
		err      error
		panicked bool
		value    any
	}
	done := make(chan result, 1)
	ctx := h.ctx()
	go func() {
		res := result{panicked: true}
		defer func() {
			if res.panicked {
				res.value = recover()
			}
			done <- res
		}()
		res.fence, res.err = q.AcquireQueued(ctx, qa)
		res.panicked = false
	}()
	h.releasing(r, b, nil)
	returned := func(res result, while string) {
		t.Helper()
		switch {
		case res.panicked:
			t.Fatalf("%s panicked %s: %v; want it to wait in line without calling Queued, which is called only if set", what, while, res.value)
		case errors.Is(res.err, errors.ErrUnsupported):
			if err := h.store.Release(h.ctx(), r, b); !errors.Is(err, lock.ErrNotHeld) {
				t.Fatalf("%s = %v, and then Release(r, b) = %s; want ErrNotHeld: a store that cannot queue must send nothing, yet the call took the lock", what, res.err, errString(err))
			}
			t.Skipf("the store does not queue acquisitions as configured: %s = %v", what, res.err)
		}
	}
	h.settle()
	select {
	case res := <-done:
		returned(res, "while a holds r")
		t.Fatalf("%s = %s while a holds r; want it to wait in line", what, errString(res.err))
	default:
	}
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	limit := waitLimit + h.opts.Tolerance
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case res := <-done:
		returned(res, "after Release(r, a)")
		h.must(what+" after Release(r, a)", res.err)
	case <-timer.C:
		t.Fatalf("%s still waiting %v after Release(r, a); want r handed to it", what, limit)
	}
	h.want("Acquire(r, c) while b holds r", h.store.Acquire(h.ctx(), r, h.tok("c"), h.long), lock.ErrNotAcquired)
	h.must("Release(r, b) once "+what+" returned nil: b must hold r", h.store.Release(h.ctx(), r, b))
}
