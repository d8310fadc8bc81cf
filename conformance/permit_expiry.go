package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// The rules of permits that expire one by one, of the limit once they are
// gone, and of WaitPermit on expiry and on its context's end.

// permitLives sets a permit's TTL with AcquirePermit, and with
// ExtendPermit of a permit first taken for the short TTL, each to the
// short TTL and to several seconds that are not whole seconds, all at
// once, each on a resource of its own: Permits must count each permit
// until its TTL less the granularity, judged by when its answer came,
// from just before the setting call was sent. The checks run together,
// so the rule takes one such TTL.
func permitLives(t *testing.T, h *harness) {
	type setter struct {
		what string
		ttl  time.Duration
		set  func(r, a string) error
	}
	var setters []setter
	for _, ttl := range []time.Duration{h.ttl, 5500*time.Millisecond + 2*h.gran} {
		setters = append(setters, setter{fmt.Sprintf("AcquirePermit(r, a, limit %d, %v)", permitLimit, ttl), ttl, func(r, a string) error {
			return h.acquirePermit(r, a, ttl)
		}}, setter{fmt.Sprintf("ExtendPermit(r, a, %v) of a permit taken for %v", ttl, h.ttl), ttl, func(r, a string) error {
			if err := h.acquirePermit(r, a, h.ttl); err != nil {
				return err
			}
			return h.permits().ExtendPermit(h.ctx(), r, a, ttl)
		}})
	}
	var wg sync.WaitGroup
	for i, c := range setters {
		r, a := h.res(fmt.Sprint("r", i)), h.tok("a")
		wg.Go(func() {
			start := time.Now()
			if err := c.set(r, a); err != nil {
				t.Errorf("%s = %v; want nil", c.what, err)
				return
			}
			held, after, err := h.lives(start, c.ttl, func() (bool, error) {
				n, err := h.permits().Permits(h.ctx(), r)
				return n > 0, err
			})
			switch {
			case err != nil:
				t.Errorf("Permits(r) %v after %s = %v; want nil", after.Round(time.Millisecond), c.what, err)
			case !held:
				t.Errorf("Permits(r) = 0 %v after %s (granularity %v); want 1 until %v: the permit expired early",
					after.Round(time.Millisecond), c.what, h.gran, c.ttl-h.gran)
			default:
				// The permit lived its TTL less the granularity, and may
				// be gone by now.
				if err := h.permits().ReleasePermit(h.ctx(), r, a); err != nil && !errors.Is(err, lock.ErrNotHeld) {
					t.Errorf("ReleasePermit(r, a) %v after %s = %v; want nil, or ErrNotHeld once its TTL could have run out", after.Round(time.Millisecond), c.what, err)
				}
			}
		})
	}
	wg.Wait()
}

// permitPartialExpiry takes one permit with the short TTL, then the others
// with the long one: the short one must expire on its own, and its place
// be free while the others are still held.
func permitPartialExpiry(t *testing.T, h *harness) {
	r, s := h.res("r"), h.tok("s")
	set := time.Now()
	h.must(fmt.Sprintf("AcquirePermit(r, s, limit %d, %v)", permitLimit, h.ttl), h.acquirePermit(r, s, h.ttl))
	var others []string
	for i := range permitLimit - 1 {
		tok := h.tok(fmt.Sprint("a", i))
		h.must(fmt.Sprintf("AcquirePermit(r, a%d, limit %d, %v) while s holds a permit", i, permitLimit, h.long), h.acquirePermit(r, tok, h.long))
		others = append(others, tok)
	}
	h.want(fmt.Sprintf("AcquirePermit(r, b, limit %d) with every permit held", permitLimit), h.acquirePermit(r, h.tok("b"), h.long), lock.ErrNotAcquired)
	h.waitPermitsFall(r, permitLimit-1, set, h.ttl, "s took the first of them")
	h.want("ReleasePermit(r, s) after s's permit expired", h.permits().ReleasePermit(h.ctx(), r, s), lock.ErrNotHeld)
	if err := h.acquirePermit(r, h.tok("b"), h.long); err != nil {
		t.Fatalf("AcquirePermit(r, b, limit %d) after s's permit expired, %d of %d still held = %v; want nil: an expired permit still takes a place",
			permitLimit, permitLimit-1, permitLimit, err)
	}
	h.wantPermits(r, permitLimit, "after b took the place of s's expired permit")
	for i, tok := range others {
		h.must(fmt.Sprintf("ReleasePermit(r, a%d)", i), h.permits().ReleasePermit(h.ctx(), r, tok))
	}
}

// permitLimitAfterExpiry: once every permit taken under a limit has
// expired, a permit under another limit is granted.
func permitLimitAfterExpiry(t *testing.T, h *harness) {
	r := h.res("r")
	set := time.Now()
	h.must(fmt.Sprintf("AcquirePermit(r, a, limit %d, %v)", permitLimit, h.ttl), h.acquirePermit(r, h.tok("a"), h.ttl))
	h.waitPermitsExpired(r, set, h.ttl, "a took a permit")
	b := h.tok("b")
	if _, err := h.permits().AcquirePermit(h.ctx(), r, b, permitLimit+1, h.long); err != nil {
		t.Fatalf("AcquirePermit(r, b, limit %d) once the only permit, taken with limit %d, expired = %v; want nil: the limit of expired permits binds no one",
			permitLimit+1, permitLimit, err)
	}
	h.must("ReleasePermit(r, b)", h.permits().ReleasePermit(h.ctx(), r, b))
}

func permitCanceledContext(t *testing.T, h *harness) { deadContextPermitCalls(t, h, false) }
func permitExpiredDeadline(t *testing.T, h *harness) { deadContextPermitCalls(t, h, true) }

// deadContextPermitCalls checks that permit calls made with a dead
// context report the context's error, never an outcome: not
// ErrNotAcquired, ErrLimitMismatch or ErrNotHeld, and no count of the
// permits that is not the real one.
func deadContextPermitCalls(t *testing.T, h *harness, expired bool) {
	ctx, what, target := h.deadContext(expired)
	full, free, b := h.res("full"), h.res("free"), h.tok("b")
	tokens := h.fillPermits(full, "a", h.long)

	_, err := h.permits().AcquirePermit(ctx, full, b, permitLimit, h.long)
	if errors.Is(err, lock.ErrNotAcquired) || !errors.Is(err, target) {
		t.Errorf("AcquirePermit(full, b, limit %d) with %s context = %v; want %s, not ErrNotAcquired", permitLimit, what, errString(err), sentinelName(target))
	}
	_, err = h.permits().AcquirePermit(ctx, full, b, permitLimit+1, h.long)
	if errors.Is(err, lock.ErrLimitMismatch) || !errors.Is(err, target) {
		t.Errorf("AcquirePermit(full, b, limit %d) with %s context = %v; want %s, not ErrLimitMismatch", permitLimit+1, what, errString(err), sentinelName(target))
	}
	_, err = h.permits().AcquirePermit(ctx, free, b, permitLimit, h.long)
	if err == nil || errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("AcquirePermit(free, b) with %s context = %v; want an error matching %s", what, errString(err), sentinelName(target))
	}
	// Whatever the store did, a release by token must leave free free.
	if err := h.permits().ReleasePermit(h.ctx(), free, b); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("ReleasePermit(free, b) after the AcquirePermit with %s context = %v; want nil or ErrNotHeld", what, err)
	}
	h.wantPermits(free, 0, fmt.Sprintf("after the AcquirePermit with %s context and a release by its token", what))

	// ReleasePermit and ExtendPermit report the context's error too,
	// whoever asks: neither "not held" nor success, which would tell the
	// holder that it renewed or freed a permit the call never touched.
	if err := h.permits().ReleasePermit(ctx, full, b); !errors.Is(err, target) {
		t.Errorf("ReleasePermit(full, b) with %s context = %v; want %s: a failed call must not claim an outcome", what, errString(err), sentinelName(target))
	}
	if err := h.permits().ExtendPermit(ctx, full, b, h.long); !errors.Is(err, target) {
		t.Errorf("ExtendPermit(full, b) with %s context = %v; want %s: a failed call must not claim an outcome", what, errString(err), sentinelName(target))
	}
	if err := h.permits().ExtendPermit(ctx, full, tokens[0], h.long); !errors.Is(err, target) {
		t.Errorf("ExtendPermit(full, a0) with %s context = %v; want %s: its holder would believe the permit renewed", what, errString(err), sentinelName(target))
	}
	if n, err := h.permits().Permits(ctx, full); err == nil && n != permitLimit {
		t.Errorf("Permits(full) with %s context = %d, nil while %d permits are held; want %s, or %d", what, n, permitLimit, sentinelName(target), permitLimit)
	}
	if w, ok := h.store.(lock.PermitWaiter); ok {
		if err := w.WaitPermit(ctx, full); !errors.Is(err, target) {
			t.Errorf("WaitPermit(full) with %s context while every permit is held = %v; want %s", what, errString(err), sentinelName(target))
		}
	}
	h.wantPermits(full, permitLimit, fmt.Sprintf("after permit calls with %s context", what))
	if err := h.permits().ReleasePermit(ctx, full, tokens[0]); !errors.Is(err, target) {
		t.Errorf("ReleasePermit(full, a0) with %s context = %v; want %s: its holder would believe the permit freed", what, errString(err), sentinelName(target))
	}
	// The release by the holder's token may have freed its permit after all.
	if err := h.permits().ReleasePermit(h.ctx(), full, tokens[0]); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("ReleasePermit(full, a0) = %v; want nil, or ErrNotHeld after the release with %s context", err, what)
	}
	for i, tok := range tokens[1:] {
		h.must(fmt.Sprintf("ReleasePermit(full, a%d)", i+1), h.permits().ReleasePermit(h.ctx(), full, tok))
	}
}

func waitPermitWakesOnExpiry(t *testing.T, h *harness) {
	r := h.res("r")
	start := time.Now()
	h.fillPermits(r, "a", h.ttl)
	done := startWaitPermit(h, h.ctx(), r)
	limit := time.Until(start.Add(h.expiryBound(h.ttl) + h.opts.Tolerance))
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err := <-done:
		h.must(fmt.Sprintf("WaitPermit(r) after every permit, each taken with ttl %v, expired", h.ttl), err)
	case <-timer.C:
		t.Fatalf("WaitPermit(r) still blocked %v after every permit was taken with ttl %v; want it to return nil once they expire",
			time.Since(start).Round(time.Millisecond), h.ttl)
	}
}

func waitPermitHonoursContext(t *testing.T, h *harness) {
	r := h.res("r")
	h.fillPermits(r, "a", h.long)
	ctx, cancel := context.WithTimeout(h.ctx(), 50*time.Millisecond)
	defer cancel()
	done := startWaitPermit(h, ctx, r)
	timer := time.NewTimer(50*time.Millisecond + waitLimit)
	defer timer.Stop()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitPermit(r) with a 50ms context while every permit is held = %v; want context.DeadlineExceeded", errString(err))
		}
	case <-timer.C:
		t.Fatalf("WaitPermit(r) still blocked %v after its context ended; want it to return context.DeadlineExceeded", waitLimit)
	}
}

// permitExtendShortens: ExtendPermit with a TTL shorter than the one left
// makes the permit expire at the new one.
func permitExtendShortens(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	h.must(fmt.Sprintf("AcquirePermit(r, a, limit %d, %v)", permitLimit, h.long), h.acquirePermit(r, a, h.long))
	h.must(fmt.Sprintf("ExtendPermit(r, a, %v)", h.ttl), h.permits().ExtendPermit(h.ctx(), r, a, h.ttl))
	h.waitPermitsExpired(r, time.Now(), h.ttl, fmt.Sprintf("ExtendPermit(r, a, %v) of a permit taken for %v", h.ttl, h.long))
}
