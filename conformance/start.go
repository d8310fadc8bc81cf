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

// The rules of lock.Starter.

// errNoAnswer is start's error when done is not called in time.
var errNoAnswer = errors.New("done not called 35s after Start; want it called by the context's deadline")

// start makes c through the store's Start and returns its outcome, or
// errNoAnswer if done is not called within the call's bound. It fails the
// rule if done is called more than once (checked when the rule ends).
func (h *harness) start(ctx context.Context, c lock.Call) (uint64, error) {
	type answer struct {
		fence uint64
		err   error
	}
	answers := make(chan answer, 1)
	var calls atomic.Int32
	h.store.(lock.Starter).Start(ctx, c, func(fence uint64, err error) {
		if calls.Add(1) == 1 {
			answers <- answer{fence, err}
		}
	})
	h.t.Cleanup(func() {
		if n := calls.Load(); n > 1 {
			h.t.Errorf("Start(%v %s) called done %d times; want exactly once", c.Op, h.name(c.Resource), n)
		}
	})
	timer := time.NewTimer(callTimeout + 5*time.Second)
	defer timer.Stop()
	select {
	case a := <-answers:
		return a.fence, a.err
	case <-timer.C:
		return 0, errNoAnswer
	}
}

// startErr makes c through Start, fails the rule unless the fence it
// answers is 0 (as for every call but a successful CallAcquireFenced),
// and returns its error.
func (h *harness) startErr(ctx context.Context, c lock.Call) error {
	h.t.Helper()
	fence, err := h.start(ctx, c)
	if fence != 0 && (c.Op != lock.CallAcquireFenced || err != nil) {
		h.t.Fatalf("Start(%v %s) answered fence %d with error %v; want fence 0", c.Op, h.name(c.Resource), fence, errString(err))
	}
	return err
}

// startOutcomes: every call made through Start has the outcome of the
// same call made through the blocking method.
func startOutcomes(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	call := func(op lock.CallOp, token string) lock.Call {
		return lock.Call{Op: op, Resource: r, Token: token, TTL: h.long}
	}
	h.must("Start(acquire r, a)", h.startErr(h.ctx(), call(lock.CallAcquire, a)))
	if !h.exists(r) {
		t.Fatal("Exists(r) = false after Start(acquire r, a) succeeded; want true")
	}
	h.want("Start(acquire r, b) while a holds r", h.startErr(h.ctx(), call(lock.CallAcquire, b)), lock.ErrNotAcquired)
	h.want("Start(acquire r, a) while a holds r (not re-entrant)", h.startErr(h.ctx(), call(lock.CallAcquire, a)), lock.ErrNotAcquired)
	if _, ok := h.store.(lock.Extender); ok {
		h.want("Start(extend r, b) while a holds r", h.startErr(h.ctx(), call(lock.CallExtend, b)), lock.ErrNotHeld)
		h.must("Start(extend r, a)", h.startErr(h.ctx(), call(lock.CallExtend, a)))
	} else {
		h.want("Start(extend r, a) on a store that cannot extend", h.startErr(h.ctx(), call(lock.CallExtend, a)), errors.ErrUnsupported)
	}
	if _, ok := h.store.(lock.Fencer); !ok {
		h.want("Start(acquire fenced r, b) on a store that cannot fence", h.startErr(h.ctx(), call(lock.CallAcquireFenced, b)), errors.ErrUnsupported)
	}
	if _, ok := h.store.(lock.FenceRaiser); !ok {
		h.want("Start(raise fence r, 1) on a store that cannot raise fences", h.startErr(h.ctx(), lock.Call{Op: lock.CallRaiseFence, Resource: r, Fence: 1}), errors.ErrUnsupported)
	}
	h.want("Start(release r, b) while a holds r", h.startErr(h.ctx(), call(lock.CallRelease, b)), lock.ErrNotHeld)
	if !h.exists(r) {
		t.Fatal("Exists(r) = false after Start(release r, b) with the wrong token; want true")
	}
	h.must("Start(release r, a)", h.startErr(h.ctx(), call(lock.CallRelease, a)))
	if h.exists(r) {
		t.Fatal("Exists(r) = true after Start(release r, a); want false")
	}
	h.want("Start(release r, a) again", h.startErr(h.ctx(), call(lock.CallRelease, a)), lock.ErrNotHeld)
	if _, ok := h.store.(lock.Extender); ok {
		h.want("Start(extend r, a) once released", h.startErr(h.ctx(), call(lock.CallExtend, a)), lock.ErrNotHeld)
		if h.exists(r) {
			t.Fatal("Exists(r) = true after Start(extend r, a) of a released lock; want false: extension must not re-create a lock")
		}
	}
}

// startUnknownCall: a call of an operation Start does not know is
// answered as lock.Call.Run answers it, with an error matching
// lock.ErrInvalid, and takes no lock.
func startUnknownCall(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	c := lock.Call{Op: lock.CallOp(200), Resource: r, Token: a, TTL: h.long}
	h.want("Start(unknown call 200 r, a)", h.startErr(h.ctx(), c), lock.ErrInvalid)
	if h.exists(r) {
		t.Fatal("Exists(r) = true after Start(unknown call 200 r, a); want false: an unknown call must change nothing")
	}
}

// startFenced: fenced acquisitions through Start are refused as
// AcquireFenced's are, and their fences increase strictly together with
// AcquireFenced's.
func startFenced(t *testing.T, h *harness) {
	fs := &fences{h: h}
	r := h.res("r")
	startFence := func(call, token string) {
		t.Helper()
		fence, err := h.start(h.ctx(), lock.Call{Op: lock.CallAcquireFenced, Resource: r, Token: token, TTL: h.long})
		h.must(call, err)
		fs.check(call, fence, 0)
	}
	a := h.tok("a")
	startFence("Start(acquire fenced r, a)", a)
	h.want("Start(acquire fenced r, b) while a holds r", h.startErr(h.ctx(), lock.Call{Op: lock.CallAcquireFenced, Resource: r, Token: h.tok("b"), TTL: h.long}), lock.ErrNotAcquired)
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	c := fs.acquire("AcquireFenced(r, c) after the fenced Start", r, h.long, 0)
	h.must("Release(r, c)", h.store.Release(h.ctx(), r, c))
	d := h.tok("d")
	startFence("Start(acquire fenced r, d) after AcquireFenced(r, c)", d)
	h.must("Start(release r, d)", h.startErr(h.ctx(), lock.Call{Op: lock.CallRelease, Resource: r, Token: d}))
}

// startRaiseFence: RaiseFence through Start raises as RaiseFence does.
func startRaiseFence(t *testing.T, h *harness) {
	fs := &fences{h: h}
	r := h.res("r")
	a := fs.acquire("AcquireFenced(r, a)", r, h.long, 0)
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	floor := fs.last + 1000
	h.must(fmt.Sprintf("Start(raise fence r, %d)", floor), h.startErr(h.ctx(), lock.Call{Op: lock.CallRaiseFence, Resource: r, Fence: floor}))
	fs.acquire(fmt.Sprintf("AcquireFenced(r, b) after Start(raise fence r, %d)", floor), r, h.long, floor)
}

func startCanceled(t *testing.T, h *harness)        { deadContextStarts(t, h, false) }
func startExpiredDeadline(t *testing.T, h *harness) { deadContextStarts(t, h, true) }

// deadContextStarts checks that calls started with a dead context report
// the context's error, never a lock outcome.
func deadContextStarts(t *testing.T, h *harness, expired bool) {
	ctx, what, target := h.deadContext(expired)
	held, free, holder, a := h.res("held"), h.res("free"), h.tok("holder"), h.tok("a")
	h.must("Acquire(held, holder)", h.store.Acquire(h.ctx(), held, holder, h.long))
	calls := []lock.Call{
		{Op: lock.CallAcquire, Resource: held, Token: a, TTL: h.long},
		{Op: lock.CallAcquire, Resource: free, Token: a, TTL: h.long},
		{Op: lock.CallRelease, Resource: held, Token: a},
	}
	if _, ok := h.store.(lock.Extender); ok {
		calls = append(calls, lock.Call{Op: lock.CallExtend, Resource: held, Token: a, TTL: h.long})
	}
	if _, ok := h.store.(lock.Fencer); ok {
		calls = append(calls, lock.Call{Op: lock.CallAcquireFenced, Resource: held, Token: a, TTL: h.long})
	}
	if _, ok := h.store.(lock.FenceRaiser); ok {
		calls = append(calls, lock.Call{Op: lock.CallRaiseFence, Resource: held, Fence: 1})
	}
	for _, c := range calls {
		if err := h.startErr(ctx, c); !errors.Is(err, target) {
			t.Errorf("Start(%v %s, a) with %s context = %v; want %s", c.Op, h.name(c.Resource), what, errString(err), sentinelName(target))
		}
	}
	if err := h.store.Release(h.ctx(), free, a); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(free, a) = %v; want nil or ErrNotHeld", err)
	}
	if !h.exists(held) {
		t.Errorf("Exists(held) = false after calls started with %s context; want true", what)
	}
	h.must("Release(held, holder)", h.store.Release(h.ctx(), held, holder))
}

// startOwnDeadline starts, all at once, acquisitions with deadlines of up
// to a millisecond and a half and acquisitions with long ones, each on a
// resource of its own. The long ones must all succeed; the short ones
// must be answered by their deadline, with success or an error of their
// own — context.DeadlineExceeded, or the transport's (an i/o timeout
// from a socket deadline set from the context's), as lock.Store allows
// for an outcome the store cannot be sure of — never ErrNotAcquired (nor
// ErrNotHeld): the resource was free. (Lateness is judged with a second's slack: a loaded
// machine delays answers, and the batching this rule is after fails the
// long calls outright.)
func startOwnDeadline(t *testing.T, h *harness) {
	s := h.store.(lock.Starter)
	lateness := time.Second + h.opts.Tolerance
	for round := range max(h.opts.Rounds/4, 1) {
		n := 4 * h.opts.Contenders
		type answer struct {
			err error
			at  time.Time
		}
		answers := make([]chan answer, n)
		calls := make([]lock.Call, n)
		deadlines := make([]time.Time, n)
		for i := range n {
			answers[i] = make(chan answer, 1)
			calls[i] = lock.Call{Op: lock.CallAcquire, Resource: h.res(fmt.Sprintf("r%d-%d", round, i)), Token: h.tok("a"), TTL: h.long}
		}
		for i := range n {
			ctx := h.ctx()
			if i%2 == 1 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(i)*50*time.Microsecond)
				defer cancel()
				deadlines[i], _ = ctx.Deadline()
			}
			s.Start(ctx, calls[i], func(_ uint64, err error) {
				select {
				case answers[i] <- answer{err, time.Now()}:
				default: // a second answer: StartConcurrent tells
				}
			})
		}
		timer := time.NewTimer(callTimeout + 5*time.Second)
		for i := range n {
			var a answer
			select {
			case a = <-answers[i]:
			case <-timer.C:
				t.Fatalf("round %d: Start(acquire r%d) not answered 35s later; want every call answered by its deadline", round, i)
			}
			switch {
			case i%2 == 0 && a.err != nil:
				t.Errorf("round %d: Start(acquire r%d) with a 30s deadline = %v, among calls with deadlines of a millisecond or so; want nil: a call must be answered by its own deadline, not another's", round, i, a.err)
			case i%2 == 1 && (errors.Is(a.err, lock.ErrNotAcquired) || errors.Is(a.err, lock.ErrNotHeld)):
				t.Errorf("round %d: Start(acquire r%d) of a free resource with a %v deadline = %v; want nil, or an error of its own (the context's or the transport's), not ErrNotAcquired or ErrNotHeld", round, i, time.Duration(i)*50*time.Microsecond, a.err)
			case i%2 == 1 && a.at.Sub(deadlines[i]) > lateness:
				t.Errorf("round %d: Start(acquire r%d) answered %v after its deadline; want it answered by the deadline (slack %v)", round, i, a.at.Sub(deadlines[i]), lateness)
			}
		}
		timer.Stop()
		for _, c := range calls {
			if err := h.store.Release(h.ctx(), c.Resource, c.Token); err != nil && !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("Release(%s) = %v; want nil or ErrNotHeld", h.name(c.Resource), err)
			}
		}
		if t.Failed() {
			return
		}
	}
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
			case <-time.After(callTimeout + 5*time.Second):
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
