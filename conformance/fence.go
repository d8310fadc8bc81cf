package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// The rules of lock.Fencer and lock.FenceRaiser.

// fences takes fenced locks and checks that each fence exceeds every
// fence before it.
type fences struct {
	h    *harness
	last uint64
}

// acquire takes resource under a fresh token with AcquireFenced and
// returns the token; the fence must exceed every earlier one, and floor.
func (fs *fences) acquire(call, resource string, ttl time.Duration, floor uint64) string {
	h := fs.h
	h.t.Helper()
	token := h.tok("f")
	fence, err := h.store.(lock.Fencer).AcquireFenced(h.ctx(), resource, token, ttl)
	h.must(call, h.releasing(resource, token, err))
	fs.check(call, fence, floor)
	return token
}

// check fails the rule unless fence exceeds every earlier fence and floor.
func (fs *fences) check(call string, fence, floor uint64) {
	fs.h.t.Helper()
	if want := max(fs.last, floor); fence == 0 || fence <= want {
		why := " (strictly greater than every earlier one)"
		if want == 0 {
			why = ": 0 is the fence of a lock taken without fencing (lock.Fencer)"
		}
		fs.h.t.Fatalf("%s = fence %d; want a fence > %d%s", call, fence, want, why)
	}
	fs.last = fence
}

func fencingIncreases(t *testing.T, h *harness) {
	f := h.store.(lock.Fencer)
	fs := &fences{h: h}
	r, other := h.res("r"), h.res("other")
	a := fs.acquire("AcquireFenced(r, a)", r, h.long, 0)
	if fence, err := f.AcquireFenced(h.ctx(), r, h.tok("b"), h.long); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("AcquireFenced(r, b) while a holds r = %d, %v; want ErrNotAcquired", fence, errString(err))
	}
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	o := h.tok("o")
	if _, err := f.AcquireFenced(h.ctx(), other, o, h.long); h.releasing(other, o, err) != nil {
		t.Fatalf("AcquireFenced(other, o) = %v; want nil", err)
	}
	fs.acquire("AcquireFenced(r, c) after Release(r, a)", r, h.ttl, 0)
	h.waitExpired(r, time.Now(), h.ttl)
	fs.acquire("AcquireFenced(r, d) after c's lock expired", r, h.long, 0)

	// A resource whose only lock expired, never released.
	fresh, fs := h.res("fresh"), &fences{h: h}
	fs.acquire("AcquireFenced(fresh, e), the first lock of fresh", fresh, h.ttl, 0)
	h.waitExpired(fresh, time.Now(), h.ttl)
	fs.acquire("AcquireFenced(fresh, f) after e's lock expired", fresh, h.long, 0)
}

// fencingAcrossRestart takes fenced locks, restarts the server, and
// checks that the fences after the restart exceed those before: on a
// resource still held when the server went down, on one released before,
// and (for a FenceRaiser) on one whose fences were raised.
func fencingAcrossRestart(t *testing.T, h *harness) {
	f := h.store.(lock.Fencer)
	raiser, raises := h.store.(lock.FenceRaiser)
	held, released, raised := h.res("held"), h.res("released"), h.res("raised")
	onHeld, onReleased := &fences{h: h}, &fences{h: h}
	a := onHeld.acquire("AcquireFenced(held, a)", held, h.long, 0)
	b := onReleased.acquire("AcquireFenced(released, b)", released, h.long, 0)
	h.must("Release(released, b)", h.store.Release(h.ctx(), released, b))
	floor := max(onHeld.last, onReleased.last) + 1000
	if raises {
		h.must(fmt.Sprintf("RaiseFence(raised, %d)", floor), raiser.RaiseFence(h.ctx(), raised, floor))
	}

	h.opts.Restart(t)

	token := h.tok("c")
	fence, err := f.AcquireFenced(h.ctx(), held, token, h.long)
	h.releasing(held, token, err)
	if errors.Is(err, lock.ErrNotAcquired) {
		// The lock survived the restart (the server persists): it is still a's.
		h.must("Release(held, a) after a restart that kept a's lock", h.store.Release(h.ctx(), held, a))
		fence, err = f.AcquireFenced(h.ctx(), held, token, h.long)
	}
	h.must("AcquireFenced(held, c) after a restart", err)
	onHeld.check("AcquireFenced(held, c) after a restart, with a holding held before it", fence, 0)
	onReleased.acquire("AcquireFenced(released, d) after a restart", released, h.long, 0)
	if raises {
		(&fences{h: h}).acquire(fmt.Sprintf("AcquireFenced(raised, e) after RaiseFence(raised, %d) and a restart", floor), raised, h.long, floor)
	}
}

// raiseFence: RaiseFence(r, F) makes the next fence of r exceed F, lower
// values change nothing, and the lock itself is left alone.
func raiseFence(t *testing.T, h *harness) {
	raiser := h.store.(lock.FenceRaiser)
	fs := &fences{h: h}
	r := h.res("r")
	a := fs.acquire("AcquireFenced(r, a)", r, h.long, 0)
	floor := fs.last + 1000
	h.must(fmt.Sprintf("RaiseFence(r, %d) while a holds r", floor), raiser.RaiseFence(h.ctx(), r, floor))
	h.want("Acquire(r, b) after RaiseFence while a holds r", h.store.Acquire(h.ctx(), r, h.tok("b"), h.long), lock.ErrNotAcquired)
	h.must("Release(r, a) after RaiseFence: RaiseFence must not touch the lock", h.store.Release(h.ctx(), r, a))
	c := fs.acquire(fmt.Sprintf("AcquireFenced(r, c) after RaiseFence(r, %d)", floor), r, h.long, floor)
	h.must("Release(r, c)", h.store.Release(h.ctx(), r, c))

	h.must("RaiseFence(r, 1), below r's fences", raiser.RaiseFence(h.ctx(), r, 1))
	fs.acquire("AcquireFenced(r, d) after RaiseFence(r, 1), which must change nothing", r, h.long, 0)

	fresh := h.res("fresh")
	floor = fs.last + 1000
	h.must(fmt.Sprintf("RaiseFence(fresh, %d) of a resource never locked", floor), raiser.RaiseFence(h.ctx(), fresh, floor))
	fs.acquire(fmt.Sprintf("AcquireFenced(fresh, e) after RaiseFence(fresh, %d)", floor), fresh, h.long, floor)
}

// raiseFenceNearMax raises r's fences to just below 2^64, where a 64-bit
// counter wraps around: the store may refuse the raise (ErrInvalid), and
// then its fences must go on as before; if it takes it, every fence that
// follows must exceed it, and once none can, AcquireFenced must fail
// rather than hand out a smaller one.
func raiseFenceNearMax(t *testing.T, h *harness) {
	raiser := h.store.(lock.FenceRaiser)
	f := h.store.(lock.Fencer)
	fs := &fences{h: h}
	r := h.res("r")
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, fs.acquire("AcquireFenced(r, a)", r, h.long, 0)))
	const near = math.MaxUint64 - 1
	call := "RaiseFence(r, 2^64-2)"
	if err := raiser.RaiseFence(h.ctx(), r, near); err != nil {
		if !errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("%s = %v; want nil, or ErrInvalid if the store's fences cannot go that high", call, err)
		}
		// Refused: nothing changed, and the fences go on.
		fs.acquire("AcquireFenced(r, b) after "+call+" was refused", r, h.long, 0)
		if fs.last >= near {
			t.Fatalf("AcquireFenced(r, b) after %s was refused = fence %d; want the refused raise to change nothing", call, fs.last)
		}
		return
	}
	fs.last = near
	for _, tok := range []string{"b", "c"} {
		token := h.tok(tok)
		acq := fmt.Sprintf("AcquireFenced(r, %s) after %s", tok, call)
		fence, err := f.AcquireFenced(h.ctx(), r, token, h.long)
		if err != nil {
			if errors.Is(err, lock.ErrNotAcquired) {
				t.Fatalf("%s = %v; want a fence above 2^64-2, or a failure: r is free", acq, err)
			}
			_ = h.store.Release(h.ctx(), r, token) // no fence left: failing is right
			return
		}
		fs.check(acq, fence, 0)
		h.must(fmt.Sprintf("Release(r, %s)", tok), h.store.Release(h.ctx(), r, token))
	}
}

// fencedLock: a lock taken with AcquireFenced is the lock Acquire takes,
// seen as such by every other method while it is held (Exists, Acquire,
// TTL, Holder, Extend) and free to all of them (WaitRelease too) once it
// is released. A store that keeps the fence counter in the lock's own
// record, and deletes only the token on release, reads the record left
// behind as a lock.
func fencedLock(t *testing.T, h *harness) {
	f := h.store.(lock.Fencer)
	r, a := h.res("r"), "se~cret-"+h.tok("a")+"~fenced-holder"
	start := time.Now()
	fence, err := f.AcquireFenced(h.ctx(), r, a, h.long)
	h.must(fmt.Sprintf("AcquireFenced(r, a, %v)", h.long), h.releasing(r, a, err))
	if fence == 0 {
		t.Fatalf("AcquireFenced(r, a) = fence 0, nil; want a fence > 0")
	}
	if !h.exists(r) {
		t.Fatal("Exists(r) = false while a holds r, taken with AcquireFenced; want true")
	}
	h.want("Acquire(r, b) while a holds r, taken with AcquireFenced", h.store.Acquire(h.ctx(), r, h.tok("b"), h.long), lock.ErrNotAcquired)
	if msg := h.checkTTL(r, start, h.long); msg != "" {
		t.Fatalf("while a holds r, taken with AcquireFenced(r, a, %v): %s", h.long, msg)
	}
	if hr, ok := h.store.(lock.HolderReader); ok {
		if who, held, err := hr.Holder(h.ctx(), r); err != nil || who != "fenced-holder" || !held {
			t.Fatalf("Holder(r) while a holds r, taken with AcquireFenced = %q, %v, %v; want %q, true, nil", who, held, errString(err), "fenced-holder")
		}
	}
	if ext, ok := h.store.(lock.Extender); ok {
		h.want("Extend(r, b) while a holds r, taken with AcquireFenced", ext.Extend(h.ctx(), r, h.tok("b"), h.long), lock.ErrNotHeld)
		h.must("Extend(r, a) of a lock taken with AcquireFenced", ext.Extend(h.ctx(), r, a, h.long))
	}
	// No WaitRelease waits on r as it is released: a store may hand a
	// lock released under a waiter to the waiter (package redis reserves
	// it), and r would read as held.
	h.must("Release(r, a) of a lock taken with AcquireFenced", h.store.Release(h.ctx(), r, a))
	h.checkFree(r, "after Release(r, a) of a lock taken with AcquireFenced")
	h.want("Release(r, a) a second time, of a lock taken with AcquireFenced", h.store.Release(h.ctx(), r, a), lock.ErrNotHeld)
	b := h.tok("b")
	h.must("Acquire(r, b) after Release(r, a) of a lock taken with AcquireFenced", h.releasing(r, b, h.store.Acquire(h.ctx(), r, b, h.long)))
	h.must("Release(r, b)", h.store.Release(h.ctx(), r, b))
}

// checkFree fails the rule unless every method that reads a lock finds
// resource free: Exists, TTL, Holder, and WaitRelease, which must return
// at once. when says what made it free.
func (h *harness) checkFree(resource, when string) {
	t := h.t
	t.Helper()
	name := h.name(resource)
	if h.exists(resource) {
		t.Fatalf("Exists(%s) = true %s; want false", name, when)
	}
	if tr, ok := h.store.(lock.TTLReader); ok {
		if d, held, err := tr.TTL(h.ctx(), resource); err != nil || held {
			t.Fatalf("TTL(%s) %s = %v, %v, %v; want held = false, nil", name, when, d, held, errString(err))
		}
	}
	if hr, ok := h.store.(lock.HolderReader); ok {
		if who, held, err := hr.Holder(h.ctx(), resource); err != nil || held {
			t.Fatalf("Holder(%s) %s = %q, %v, %v; want \"\", false, nil", name, when, who, held, errString(err))
		}
	}
	if w, ok := h.store.(lock.Waiter); ok {
		ctx, cancel := context.WithTimeout(h.ctx(), h.expiryBound(h.ttl))
		defer cancel()
		if err := w.WaitRelease(ctx, resource); err != nil {
			t.Fatalf("WaitRelease(%s) %s = %v; want nil at once: the resource is free", name, when, err)
		}
	}
}

// raiseFenceLeavesLock: RaiseFence changes the fences only. A held lock
// keeps its TTL — neither refreshed, made to last for good, nor cut — and
// a free resource stays free. A store that keeps the fence in the lock's
// record and writes the record back on a raise (a SET without KEEPTTL)
// breaks the first; one whose Exists finds the record a raise leaves
// breaks the second.
func raiseFenceLeavesLock(t *testing.T, h *harness) {
	raiser := h.store.(lock.FenceRaiser)

	// A lock taken for the long TTL keeps it, as TTL tells.
	long, fs := h.res("long"), &fences{h: h}
	start := time.Now()
	a := fs.acquire(fmt.Sprintf("AcquireFenced(long, a, %v)", h.long), long, h.long, 0)
	floor := fs.last + 1000
	h.must(fmt.Sprintf("RaiseFence(long, %d) while a holds long", floor), raiser.RaiseFence(h.ctx(), long, floor))
	if msg := h.checkTTL(long, start, h.long); msg != "" {
		t.Fatalf("after RaiseFence(long, %d) while a held long, taken for %v: %s: the raise changed the lock's TTL", floor, h.long, msg)
	}
	h.must("Release(long, a) after RaiseFence", h.store.Release(h.ctx(), long, a))

	// A lock taken for the short TTL lasts it, and no longer.
	short, fs := h.res("short"), &fences{h: h}
	start = time.Now()
	fs.acquire(fmt.Sprintf("AcquireFenced(short, b, %v)", h.ttl), short, h.ttl, 0)
	set := time.Now()
	if msg := h.checkTTL(short, start, h.ttl); msg != "" {
		t.Fatalf("after AcquireFenced(short, b, %v), before any raise: %s", h.ttl, msg) // the TTL rule's to report
	}
	floor = fs.last + 1000
	h.must(fmt.Sprintf("RaiseFence(short, %d) while b holds short", floor), raiser.RaiseFence(h.ctx(), short, floor))
	if msg := h.checkTTL(short, start, h.ttl); msg != "" {
		t.Fatalf("after RaiseFence(short, %d) while b held short, taken for %v: %s: the raise changed the lock's TTL", floor, h.ttl, msg)
	}
	held, after, err := h.lasts(short, start, h.ttl)
	h.must("Exists(short)", err)
	if !held {
		t.Fatalf("Exists(short) = false %v after AcquireFenced(short, b, %v) and RaiseFence(short, %d) (granularity %v); want true: the raise cut the lock short",
			after.Round(time.Millisecond), h.ttl, floor, h.gran)
	}
	if ok, after := h.expires(short, set, h.ttl); !ok {
		t.Fatalf("Exists(short) = true %v after AcquireFenced(short, b, %v) and RaiseFence(short, %d); want false: the raise made the lock outlive its TTL",
			after.Round(time.Millisecond), h.ttl, floor)
	}

	// A free resource stays free.
	free := h.res("free")
	floor = 1000
	h.must(fmt.Sprintf("RaiseFence(free, %d) of a resource never locked", floor), raiser.RaiseFence(h.ctx(), free, floor))
	h.checkFree(free, fmt.Sprintf("after RaiseFence(free, %d) of a resource never locked", floor))
	c := h.tok("c")
	h.must(fmt.Sprintf("Acquire(free, c) after RaiseFence(free, %d)", floor), h.releasing(free, c, h.store.Acquire(h.ctx(), free, c, h.long)))
	h.must("Release(free, c)", h.store.Release(h.ctx(), free, c))
}
