package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// The rules of the required methods: Acquire, Release, Exists.

func acquireFree(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a) on a free resource", h.releasing(r, a, h.store.Acquire(h.ctx(), r, a, h.long)))
	if !h.exists(r) {
		t.Fatal("Exists(r) = false after Acquire(r, a) = nil; want true")
	}
}

func acquireHeld(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	h.want("Acquire(r, b) while a holds r", h.store.Acquire(h.ctx(), r, b, h.long), lock.ErrNotAcquired)
	h.want("Release(r, b) after b was refused", h.store.Release(h.ctx(), r, b), lock.ErrNotHeld)
	h.must("Release(r, a): a must still hold r after b was refused", h.store.Release(h.ctx(), r, a))
}

func acquireHeldBySelf(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	h.want("Acquire(r, a) again (locks are not re-entrant)", h.store.Acquire(h.ctx(), r, a, h.long), lock.ErrNotAcquired)
	if f, ok := h.store.(lock.Fencer); ok {
		if fence, err := f.AcquireFenced(h.ctx(), r, a, h.long); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("AcquireFenced(r, a) while a holds r = %d, %v; want ErrNotAcquired (locks are not re-entrant)", fence, errString(err))
		}
	}
	h.must("Release(r, a): a must still hold r after its own refused acquisitions", h.store.Release(h.ctx(), r, a))
}

func releaseOwner(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	if h.exists(r) {
		t.Fatal("Exists(r) = true after Release(r, a) = nil; want false")
	}
	h.must("Acquire(r, b) after Release(r, a)", h.releasing(r, b, h.store.Acquire(h.ctx(), r, b, h.long)))
}

func releaseWrongToken(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	h.want("Release(r, wrongToken)", h.store.Release(h.ctx(), r, h.tok("wrong")), lock.ErrNotHeld)
	if !h.exists(r) {
		t.Fatal("Exists(r) = false after Release(r, wrongToken); want true: a release with the wrong token freed the lock")
	}
	h.must("Release(r, a) after Release(r, wrongToken)", h.store.Release(h.ctx(), r, a))
}

func releaseTwice(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	h.want("Release(r, a) a second time", h.store.Release(h.ctx(), r, a), lock.ErrNotHeld)
}

func releaseNeverHeld(t *testing.T, h *harness) {
	h.want("Release(r, a) of a resource never locked", h.store.Release(h.ctx(), h.res("r"), h.tok("a")), lock.ErrNotHeld)
}

func releaseAfterExpiry(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.waitExpired(r, time.Now(), h.ttl)
	h.want("Release(r, a) after r expired", h.store.Release(h.ctx(), r, a), lock.ErrNotHeld)
}

func releaseAfterTakeover(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.waitExpired(r, time.Now(), h.ttl)
	h.must("Acquire(r, b) after a's lock expired", h.store.Acquire(h.ctx(), r, b, h.long))
	h.want("Release(r, a) after b took r over", h.store.Release(h.ctx(), r, a), lock.ErrNotHeld)
	if !h.exists(r) {
		t.Fatal("Exists(r) = false after Release(r, a) while b holds r; want true: a late release freed another owner's lock")
	}
	h.must("Release(r, b)", h.store.Release(h.ctx(), r, b))
}

// longTokens: two tokens of a kilobyte that differ in their last byte
// only are two owners.
func longTokens(t *testing.T, h *harness) {
	r := h.res("r")
	common := h.tok("long") + strings.Repeat("t", 1000)
	a, b := common+"a", common+"b"
	h.must("Acquire(r, a) with a 1KB token a", h.store.Acquire(h.ctx(), r, a, h.long))
	h.want("Acquire(r, b) while a holds r, b differing from a in its last byte", h.store.Acquire(h.ctx(), r, b, h.long), lock.ErrNotAcquired)
	h.want("Release(r, b) while a holds r, b differing from a in its last byte", h.store.Release(h.ctx(), r, b), lock.ErrNotHeld)
	if !h.exists(r) {
		t.Fatal("Exists(r) = false after Release(r, b); want true: a token differing only in its last byte released a's lock")
	}
	if ext, ok := h.store.(lock.Extender); ok {
		h.want("Extend(r, b) while a holds r, b differing from a in its last byte", ext.Extend(h.ctx(), r, b, h.long), lock.ErrNotHeld)
	}
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	h.must("Acquire(r, b) once a released r", h.store.Acquire(h.ctx(), r, b, h.long))
	h.want("Release(r, a) while b holds r", h.store.Release(h.ctx(), r, a), lock.ErrNotHeld)
	h.must("Release(r, b)", h.store.Release(h.ctx(), r, b))
}

// lookalikeTokens: tokens that differ from the holder's only in case, in
// surrounding white space or in Unicode normalization are other owners,
// as a store comparing them as text (a SQL collation, say) may forget.
func lookalikeTokens(t *testing.T, h *harness) {
	r := h.res("r")
	a := "Tok-" + h.tok("a") + "-caf\u00e9"
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	ext, extends := h.store.(lock.Extender)
	for _, b := range []struct{ how, token string }{
		{"in case", strings.ToUpper(a)},
		{"in case", strings.ToLower(a)},
		{"by a trailing space", a + " "},
		{"by a leading space", " " + a},
		{"in Unicode normalization", strings.TrimSuffix(a, "\u00e9") + "e\u0301"},
	} {
		if extends {
			h.want(fmt.Sprintf("Extend(r, b) while a holds r, b differing from a only %s", b.how), ext.Extend(h.ctx(), r, b.token, h.long), lock.ErrNotHeld)
		}
		h.want(fmt.Sprintf("Release(r, b) while a holds r, b differing from a only %s", b.how), h.store.Release(h.ctx(), r, b.token), lock.ErrNotHeld)
		if !h.exists(r) {
			t.Fatalf("Exists(r) = false after Release(r, b), b differing from a only %s; want true: another owner released a's lock", b.how)
		}
	}
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
}

func independentResources(t *testing.T, h *harness) {
	r1, r2, a, b := h.res("r1"), h.res("r2"), h.tok("a"), h.tok("b")
	h.must("Acquire(r1, a)", h.store.Acquire(h.ctx(), r1, a, h.long))
	h.must("Acquire(r2, b) while a holds r1", h.store.Acquire(h.ctx(), r2, b, h.long))
	h.must("Release(r1, a)", h.store.Release(h.ctx(), r1, a))
	if !h.exists(r2) {
		t.Fatal("Exists(r2) = false after Release(r1, a); want true: releasing one resource freed another")
	}
	h.want("Release(r2, a) with r1's token", h.store.Release(h.ctx(), r2, a), lock.ErrNotHeld)
	h.must("Release(r2, b)", h.store.Release(h.ctx(), r2, b))
}

func contention(t *testing.T, h *harness) {
	r := h.res("r")
	for round := range h.opts.Rounds {
		var winners atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		tokens := make([]string, h.opts.Contenders)
		errs := make([]error, h.opts.Contenders)
		for i := range tokens {
			tokens[i] = h.tok(fmt.Sprintf("c%d", i))
		}
		ctx := h.ctx()
		for i := range h.opts.Contenders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = h.store.Acquire(ctx, r, tokens[i], h.long)
				if errs[i] == nil {
					winners.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				winner = i
			case !errors.Is(err, lock.ErrNotAcquired):
				t.Fatalf("round %d: Acquire(r, c%d) = %v; want nil or ErrNotAcquired", round, i, err)
			}
		}
		if n := winners.Load(); n != 1 {
			t.Fatalf("round %d: %d of %d concurrent Acquire(r, …) calls succeeded; want exactly 1", round, n, h.opts.Contenders)
		}
		h.must(fmt.Sprintf("round %d: Release(r, winner)", round), h.store.Release(h.ctx(), r, tokens[winner]))
	}
}

// deadContext returns a context that is dead — canceled, or past its
// deadline if expired is set — words for it, and the error calls made with
// it must report.
func (h *harness) deadContext(expired bool) (ctx context.Context, what string, target error) {
	if expired {
		ctx, cancel := context.WithDeadline(h.ctx(), time.Now().Add(-time.Second))
		h.t.Cleanup(cancel)
		return ctx, "an expired", context.DeadlineExceeded
	}
	ctx, cancel := context.WithCancel(h.ctx())
	cancel()
	return ctx, "a canceled", context.Canceled
}

func canceledContext(t *testing.T, h *harness) { deadContextCalls(t, h, false) }
func expiredDeadline(t *testing.T, h *harness) { deadContextCalls(t, h, true) }

// deadContextCalls checks that calls made with a dead context report the
// context's error, never a lock outcome.
func deadContextCalls(t *testing.T, h *harness, expired bool) {
	ctx, what, target := h.deadContext(expired)
	free, held, a, holder := h.res("free"), h.res("held"), h.tok("a"), h.tok("holder")
	h.must("Acquire(held, holder)", h.store.Acquire(h.ctx(), held, holder, h.long))

	err := h.store.Acquire(ctx, held, a, h.long)
	if errors.Is(err, lock.ErrNotAcquired) || !errors.Is(err, target) {
		t.Errorf("Acquire(held, a) with %s context = %v; want %s, not ErrNotAcquired", what, errString(err), sentinelName(target))
	}
	err = h.store.Acquire(ctx, free, a, h.long)
	if err == nil || errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("Acquire(free, a) with %s context = %v; want an error matching %s", what, errString(err), sentinelName(target))
	}
	// Whatever the store did, a release by token must leave free free.
	if err := h.store.Release(h.ctx(), free, a); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(free, a) after the Acquire with %s context = %v; want nil or ErrNotHeld", what, err)
	}
	if h.exists(free) {
		t.Errorf("Exists(free) = true after the Acquire with %s context and a release by its token; want false", what)
	}
	// Release and Extend report the context's error too, whoever asks:
	// neither "not held" nor success, which would tell the holder that
	// it renewed or freed a lock the call never touched.
	if err := h.store.Release(ctx, held, h.tok("other")); !errors.Is(err, target) {
		t.Errorf("Release(held, other) with %s context = %v; want %s: a failed call must not claim an outcome", what, errString(err), sentinelName(target))
	}
	ext, extends := h.store.(lock.Extender)
	if extends {
		if err := ext.Extend(ctx, held, h.tok("other"), h.long); !errors.Is(err, target) {
			t.Errorf("Extend(held, other) with %s context = %v; want %s: a failed call must not claim an outcome", what, errString(err), sentinelName(target))
		}
		if err := ext.Extend(ctx, held, holder, h.long); !errors.Is(err, target) {
			t.Errorf("Extend(held, holder) with %s context = %v; want %s: its holder would believe the lock renewed", what, errString(err), sentinelName(target))
		}
	}
	if f, ok := h.store.(lock.Fencer); ok {
		if _, err := f.AcquireFenced(ctx, held, a, h.long); errors.Is(err, lock.ErrNotAcquired) || !errors.Is(err, target) {
			t.Errorf("AcquireFenced(held, a) with %s context = %v; want %s, not ErrNotAcquired", what, errString(err), sentinelName(target))
		}
	}
	if f, ok := h.store.(lock.FenceRaiser); ok {
		if err := f.RaiseFence(ctx, held, 1); !errors.Is(err, target) {
			t.Errorf("RaiseFence(held, 1) with %s context = %v; want %s", what, errString(err), sentinelName(target))
		}
	}
	// A read with a dead context may answer what it knows, or the
	// context's error, but never that the held resource is free.
	if ok, err := h.store.Exists(ctx, held); err == nil && !ok {
		t.Errorf("Exists(held) with %s context = false, nil while holder holds held; want %s, or true", what, sentinelName(target))
	}
	if tr, ok := h.store.(lock.TTLReader); ok {
		if d, ok, err := tr.TTL(ctx, held); err == nil && !ok {
			t.Errorf("TTL(held) with %s context = %v, false, nil while holder holds held; want %s, or held", what, d, sentinelName(target))
		}
	}
	if hr, ok := h.store.(lock.HolderReader); ok {
		if who, ok, err := hr.Holder(ctx, held); err == nil && !ok {
			t.Errorf("Holder(held) with %s context = %q, false, nil while holder holds held; want %s, or held", what, who, sentinelName(target))
		}
	}
	if w, ok := h.store.(lock.Waiter); ok {
		if err := w.WaitRelease(ctx, held); !errors.Is(err, target) {
			t.Errorf("WaitRelease(held) with %s context while holder holds held = %v; want %s", what, errString(err), sentinelName(target))
		}
	}
	if !h.exists(held) {
		t.Errorf("Exists(held) = false after calls with %s context; want true", what)
	}
	err = h.store.Release(ctx, held, holder)
	if !errors.Is(err, target) {
		t.Errorf("Release(held, holder) with %s context = %v; want %s: its holder would believe the lock freed", what, errString(err), sentinelName(target))
	}
	// The release by the holder's token may have freed held after all.
	if err := h.store.Release(h.ctx(), held, holder); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(held, holder) = %v; want nil, or ErrNotHeld after the release with %s context", err, what)
	}
}

// deadlineInFlight makes calls whose deadlines, from 50µs to 1.5ms, pass
// before they are sent or while they are in flight, in a tenth of
// Options.Rounds sweeps (two by default), each call on a resource of its
// own: an Acquire (and AcquireFenced) of a free resource must return nil
// or an error of its own, never ErrNotAcquired, and a Release (and
// Extend) by the holder of a held lock nil or an error of its own, never
// ErrNotHeld, each by its deadline (judged with a second's slack, as in
// StartOwnDeadline). Whatever the call did, a release by its token must
// free the resource. As the lockers' cleanup does, the rule releases
// right after the call, and again at the end of the round if the
// resource is held then: a request its caller gave up on may still reach
// the server after that first release (on another connection of the
// client, or a stream the server serves concurrently).
func deadlineInFlight(t *testing.T, h *harness) {
	type call struct {
		name    string
		held    bool  // made by the holder of a held lock, or on a free resource
		refusal error // the answer it must not give
		do      func(ctx context.Context, r, a string) error
	}
	calls := []call{
		{"Acquire", false, lock.ErrNotAcquired, func(ctx context.Context, r, a string) error {
			return h.store.Acquire(ctx, r, a, h.long)
		}},
		{"Release", true, lock.ErrNotHeld, func(ctx context.Context, r, a string) error {
			return h.store.Release(ctx, r, a)
		}},
	}
	if f, ok := h.store.(lock.Fencer); ok {
		calls = append(calls, call{"AcquireFenced", false, lock.ErrNotAcquired, func(ctx context.Context, r, a string) error {
			_, err := f.AcquireFenced(ctx, r, a, h.long)
			return err
		}})
	}
	if e, ok := h.store.(lock.Extender); ok {
		calls = append(calls, call{"Extend", true, lock.ErrNotHeld, func(ctx context.Context, r, a string) error {
			return e.Extend(ctx, r, a, h.long)
		}})
	}
	type made struct{ r, a, what string }
	lateness := time.Second + h.opts.Tolerance
	for round := range max(h.opts.Rounds/10, 1) {
		var sent []made
		for i := range 30 {
			d := time.Duration(i+1) * 50 * time.Microsecond
			for _, c := range calls {
				r, a := h.res(fmt.Sprintf("%s%d-%d", strings.ToLower(c.name), round, i)), h.tok("a")
				what := fmt.Sprintf("%s(%s, a) of a free resource with a %v deadline", c.name, h.name(r), d)
				if c.held {
					h.must(fmt.Sprintf("Acquire(%s, a)", h.name(r)), h.store.Acquire(h.ctx(), r, a, h.long))
					what = fmt.Sprintf("%s(%s, a) by its holder with a %v deadline", c.name, h.name(r), d)
				}
				ctx, cancel := context.WithTimeout(h.ctx(), d)
				deadline, _ := ctx.Deadline()
				err := h.releasing(r, a, c.do(ctx, r, a))
				answered := time.Now()
				cancel()
				if errors.Is(err, c.refusal) {
					t.Errorf("%s = %v; want nil, or an error of its own (the context's or the transport's), not %s: a call its deadline cut short cannot know that outcome",
						what, err, sentinelName(c.refusal))
				}
				if late := answered.Sub(deadline); late > lateness {
					t.Errorf("%s answered %v after its deadline; want it answered by the deadline (slack %v)", what, late.Round(time.Millisecond), lateness)
				}
				if err := h.store.Release(h.ctx(), r, a); err != nil && !errors.Is(err, lock.ErrNotHeld) {
					t.Errorf("Release(%s, a) after %s = %v; want nil or ErrNotHeld", h.name(r), what, err)
				}
				sent = append(sent, made{r, a, what})
			}
			if t.Failed() {
				return
			}
		}
		for _, m := range sent {
			if !h.exists(m.r) {
				continue
			}
			// The call reached the server after the release: a release by
			// its token must free what it took.
			if err := h.store.Release(h.ctx(), m.r, m.a); err != nil {
				t.Errorf("Release(%s, a) while %s is held, after %s and a release by its token = %v; want nil: the call took the lock under its token", h.name(m.r), h.name(m.r), m.what, err)
			}
			if h.exists(m.r) {
				t.Errorf("Exists(%s) = true after %s and releases by its token; want false", h.name(m.r), m.what)
			}
		}
		if t.Failed() {
			return
		}
	}
}
