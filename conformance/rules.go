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

// rule is one subtest of the suite.
type rule struct {
	name  string
	needs func(lock.Store) string // the missing capability, or ""
	run   func(t *testing.T, h *harness)
}

func needsExtender(s lock.Store) string  { return missing[lock.Extender](s, "lock.Extender") }
func needsTTLReader(s lock.Store) string { return missing[lock.TTLReader](s, "lock.TTLReader") }
func needsFencer(s lock.Store) string    { return missing[lock.Fencer](s, "lock.Fencer") }
func needsWaiter(s lock.Store) string    { return missing[lock.Waiter](s, "lock.Waiter") }

func missing[C any](s lock.Store, name string) string {
	if _, ok := s.(C); ok {
		return ""
	}
	return name
}

var rules = []rule{
	{name: "AcquireFree", run: acquireFree},
	{name: "AcquireHeld", run: acquireHeld},
	{name: "AcquireHeldBySelf", run: acquireHeldBySelf},
	{name: "ReleaseOwner", run: releaseOwner},
	{name: "ReleaseWrongToken", run: releaseWrongToken},
	{name: "ReleaseTwice", run: releaseTwice},
	{name: "ReleaseNeverHeld", run: releaseNeverHeld},
	{name: "ReleaseAfterExpiry", run: releaseAfterExpiry},
	{name: "ReleaseAfterTakeover", run: releaseAfterTakeover},
	{name: "Expiry", run: expiry},
	{name: "IndependentResources", run: independentResources},
	{name: "UnusualResourceNames", run: unusualResourceNames},
	{name: "Contention", run: contention},
	{name: "CanceledContext", run: canceledContext},
	{name: "ExpiredDeadline", run: expiredDeadline},
	{name: "ExtendOwner", needs: needsExtender, run: extendOwner},
	{name: "ExtendWrongToken", needs: needsExtender, run: extendWrongToken},
	{name: "ExtendAfterExpiry", needs: needsExtender, run: extendAfterExpiry},
	{name: "ExtendAfterTakeover", needs: needsExtender, run: extendAfterTakeover},
	{name: "TTL", needs: needsTTLReader, run: ttlQuery},
	{name: "FencingIncreases", needs: needsFencer, run: fencingIncreases},
	{name: "WaitFree", needs: needsWaiter, run: waitFree},
	{name: "WaitWakesOnRelease", needs: needsWaiter, run: waitWakesOnRelease},
	{name: "WaitWakesOnExpiry", needs: needsWaiter, run: waitWakesOnExpiry},
	{name: "WaitHonoursContext", needs: needsWaiter, run: waitHonoursContext},
	{name: "StartOutcomes", needs: needsStarter, run: startOutcomes},
	{name: "StartCanceledContext", needs: needsStarter, run: startCanceled},
	{name: "StartConcurrent", needs: needsStarter, run: startConcurrent},
	{name: "SingleLocker", run: singleLocker},
	{name: "MultiLocker", run: multiLocker},
}

func acquireFree(t *testing.T, h *harness) {
	r := h.res("r")
	h.must("Acquire(r, a) on a free resource", h.store.Acquire(h.ctx(), r, h.tok("a"), h.long))
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
}

func releaseOwner(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	if h.exists(r) {
		t.Fatal("Exists(r) = true after Release(r, a) = nil; want false")
	}
	h.must("Acquire(r, b) after Release(r, a)", h.store.Acquire(h.ctx(), r, b, h.long))
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
	start := time.Now()
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.waitExpired(r, start, h.ttl)
	h.want("Release(r, a) after r expired", h.store.Release(h.ctx(), r, a), lock.ErrNotHeld)
}

func releaseAfterTakeover(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	start := time.Now()
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.waitExpired(r, start, h.ttl)
	h.must("Acquire(r, b) after a's lock expired", h.store.Acquire(h.ctx(), r, b, h.long))
	h.want("Release(r, a) after b took r over", h.store.Release(h.ctx(), r, a), lock.ErrNotHeld)
	if !h.exists(r) {
		t.Fatal("Exists(r) = false after Release(r, a) while b holds r; want true: a late release freed another owner's lock")
	}
	h.must("Release(r, b)", h.store.Release(h.ctx(), r, b))
}

func expiry(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	start := time.Now()
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	if !h.exists(r) {
		t.Fatalf("Exists(r) = false right after Acquire(r, a, %v); want true", h.ttl)
	}
	if early := h.ttl - h.gran - h.opts.Tolerance; early > 0 {
		time.Sleep(time.Until(start.Add(early)))
		if !h.exists(r) {
			t.Fatalf("Exists(r) = false %v after Acquire(r, a, %v) with granularity %v; want true: the lock expired early",
				time.Since(start).Round(time.Millisecond), h.ttl, h.gran)
		}
	}
	h.waitExpired(r, start, h.ttl)
	h.must("Acquire(r, b) after r expired", h.store.Acquire(h.ctx(), r, h.tok("b"), h.long))
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

// unusualNames are resource names every store must keep apart and accept
// as they are. Names a store may refuse through lock.ResourceValidator
// (binary ones) are in binaryNames.
var unusualNames = []string{
	"plain", "with space", "two  spaces", " leading", "colon:separated:name", "slash/and\\backslash",
	"{x}", "x", "{", "}", "{}", "a{b}c", "{a}{b}", "%20", "a_b", "a b",
	"ünïcödé-名前-🔒", "tab\there", "new\nline",
	strings.Repeat("k", 1024),
	strings.Repeat("é", 300),
}

var binaryNames = []string{"\x00nul\x00", "\xff\xfe not UTF-8", "del\x7f"}

func unusualResourceNames(t *testing.T, h *harness) {
	names := append([]string(nil), unusualNames...)
	v, validates := h.store.(lock.ResourceValidator)
	for _, n := range binaryNames {
		if validates {
			if err := v.ValidateResource(n); err != nil {
				if !errors.Is(err, lock.ErrInvalid) {
					t.Errorf("ValidateResource(%q) = %v; want nil or an error matching lock.ErrInvalid", n, err)
				}
				continue
			}
		}
		names = append(names, n)
	}
	tokens := make(map[string]string)
	for _, n := range names {
		if validates {
			if err := v.ValidateResource(n); err != nil {
				t.Fatalf("ValidateResource(%s) = %v; want nil: every store must accept this name", h.name(n), err)
			}
		}
		tok := h.tok("a")
		tokens[n] = tok
		h.must(fmt.Sprintf("Acquire(%s, a) while the other names are held", h.name(n)), h.store.Acquire(h.ctx(), n, tok, h.long))
	}
	for _, n := range names {
		if !h.exists(n) {
			t.Errorf("Exists(%s) = false after Acquire; want true", h.name(n))
		}
	}
	for _, n := range names {
		h.must(fmt.Sprintf("Release(%s, a)", h.name(n)), h.store.Release(h.ctx(), n, tokens[n]))
		if h.exists(n) {
			t.Errorf("Exists(%s) = true after Release; want false", h.name(n))
		}
	}
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

// deadContextCalls checks that calls made with a dead context report the
// context's error, never a lock outcome.
func deadContextCalls(t *testing.T, h *harness, ctx context.Context, target error, what string) {
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
	if err := h.store.Release(ctx, held, h.tok("other")); errors.Is(err, lock.ErrNotHeld) && !errors.Is(err, target) {
		t.Errorf("Release(held, other) with %s context = %v; want %s: a failed call must not claim an outcome", what, err, sentinelName(target))
	}
	if ext, ok := h.store.(lock.Extender); ok {
		if err := ext.Extend(ctx, held, h.tok("other"), h.long); errors.Is(err, lock.ErrNotHeld) && !errors.Is(err, target) {
			t.Errorf("Extend(held, other) with %s context = %v; want %s", what, err, sentinelName(target))
		}
	}
	if !h.exists(held) {
		t.Errorf("Exists(held) = false after calls with %s context; want true", what)
	}
	h.must("Release(held, holder)", h.store.Release(h.ctx(), held, holder))
}

func canceledContext(t *testing.T, h *harness) {
	ctx, cancel := context.WithCancel(h.ctx())
	cancel()
	deadContextCalls(t, h, ctx, context.Canceled, "a canceled")
}

func expiredDeadline(t *testing.T, h *harness) {
	ctx, cancel := context.WithDeadline(h.ctx(), time.Now().Add(-time.Second))
	defer cancel()
	deadContextCalls(t, h, ctx, context.DeadlineExceeded, "an expired")
}

func extendOwner(t *testing.T, h *harness) {
	ext := h.store.(lock.Extender)
	r, a := h.res("r"), h.tok("a")
	start := time.Now()
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.must("Extend(r, a) by its owner", ext.Extend(h.ctx(), r, a, h.long))
	time.Sleep(time.Until(start.Add(h.expiryBound(h.ttl))))
	if !h.exists(r) {
		t.Fatalf("Exists(r) = false after the first TTL (%v) ran out, though Extend(r, a, %v) = nil; want true", h.ttl, h.long)
	}
	h.must("Release(r, a) after Extend", h.store.Release(h.ctx(), r, a))
}

func extendWrongToken(t *testing.T, h *harness) {
	ext := h.store.(lock.Extender)
	r, a := h.res("r"), h.tok("a")
	start := time.Now()
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.want("Extend(r, wrongToken)", ext.Extend(h.ctx(), r, h.tok("wrong"), h.long), lock.ErrNotHeld)
	h.waitExpired(r, start, h.ttl) // the wrong token must not have extended it
}

func extendAfterExpiry(t *testing.T, h *harness) {
	ext := h.store.(lock.Extender)
	r, a := h.res("r"), h.tok("a")
	start := time.Now()
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.waitExpired(r, start, h.ttl)
	h.want("Extend(r, a) after r expired", ext.Extend(h.ctx(), r, a, h.long), lock.ErrNotHeld)
	if h.exists(r) {
		t.Fatal("Exists(r) = true after Extend(r, a) of an expired lock; want false: Extend re-created an expired lock")
	}
}

func extendAfterTakeover(t *testing.T, h *harness) {
	ext := h.store.(lock.Extender)
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	start := time.Now()
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.waitExpired(r, start, h.ttl)
	h.must("Acquire(r, b) after a's lock expired", h.store.Acquire(h.ctx(), r, b, h.long))
	h.want("Extend(r, a) after b took r over", ext.Extend(h.ctx(), r, a, h.long), lock.ErrNotHeld)
	h.must("Release(r, b): b must still hold r", h.store.Release(h.ctx(), r, b))
}

func ttlQuery(t *testing.T, h *harness) {
	tr := h.store.(lock.TTLReader)
	r := h.res("r")
	if d, held, err := tr.TTL(h.ctx(), r); err != nil || held {
		t.Fatalf("TTL(r) of a free resource = %v, %v, %v; want held = false", d, held, err)
	}
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, h.tok("a"), h.long))
	d, held, err := tr.TTL(h.ctx(), r)
	if err != nil || !held || d <= 0 || d > h.long+h.gran {
		t.Fatalf("TTL(r) after Acquire(r, a, %v) = %v, %v, %v; want 0 < remaining <= %v, true, nil", h.long, d, held, err, h.long+h.gran)
	}
}

func fencingIncreases(t *testing.T, h *harness) {
	f := h.store.(lock.Fencer)
	r, other := h.res("r"), h.res("other")
	var last uint64
	step := func(call string, ttl time.Duration) string {
		t.Helper()
		tok := h.tok("f")
		fence, err := f.AcquireFenced(h.ctx(), r, tok, ttl)
		h.must(call, err)
		if fence == 0 || fence <= last {
			t.Fatalf("%s = fence %d; want a fence > %d (strictly greater than every earlier one)", call, fence, last)
		}
		last = fence
		return tok
	}
	a := step("AcquireFenced(r, a)", h.long)
	if fence, err := f.AcquireFenced(h.ctx(), r, h.tok("b"), h.long); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("AcquireFenced(r, b) while a holds r = %d, %v; want ErrNotAcquired", fence, errString(err))
	}
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	if _, err := f.AcquireFenced(h.ctx(), other, h.tok("o"), h.long); err != nil {
		t.Fatalf("AcquireFenced(other, o) = %v; want nil", err)
	}
	start := time.Now()
	step("AcquireFenced(r, c) after Release(r, a)", h.ttl)
	h.waitExpired(r, start, h.ttl)
	step("AcquireFenced(r, d) after c's lock expired", h.long)
}

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

func waitWakesOnRelease(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.long))
	done := startWait(h, h.ctx(), r)
	h.settle()
	select {
	case err := <-done:
		t.Fatalf("WaitRelease(r) returned %v while a holds r; want it to block until a release", errString(err))
	default:
	}
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	awaitWait(t, done, 5*time.Second+h.opts.Tolerance, "after Release(r, a)")
}

func waitWakesOnExpiry(t *testing.T, h *harness) {
	r := h.res("r")
	start := time.Now()
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, h.tok("a"), h.ttl))
	done := startWait(h, h.ctx(), r)
	awaitWait(t, done, time.Until(start.Add(h.expiryBound(h.ttl)+h.opts.Tolerance)), fmt.Sprintf("after a lock with ttl %v expired", h.ttl))
}

func waitHonoursContext(t *testing.T, h *harness) {
	r := h.res("r")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, h.tok("a"), h.long))
	ctx, cancel := context.WithTimeout(h.ctx(), 50*time.Millisecond)
	defer cancel()
	done := startWait(h, ctx, r)
	timer := time.NewTimer(50*time.Millisecond + 5*time.Second)
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

func singleLocker(t *testing.T, h *harness) {
	l, err := lock.NewSingle(h.store, nil)
	if err != nil {
		t.Fatalf("lock.NewSingle(store, nil) = %v", err)
	}
	lockerContention(t, h, l, []lock.Store{h.store})
}

func multiLocker(t *testing.T, h *harness) {
	stores := []lock.Store{h.store, h.newStore(t), h.newStore(t)}
	l, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: time.Second})
	if err != nil {
		t.Fatalf("lock.NewMulti(3 stores, nil) = %v", err)
	}
	lockerContention(t, h, l, stores)
}

// lockerContention has workers take turns on one resource through l,
// checking that no two are ever inside at once and no update is lost.
func lockerContention(t *testing.T, h *harness, l lock.Locker, stores []lock.Store) {
	const perWorker = 5
	workers := min(h.opts.Contenders, 4)
	r := h.res("r")
	ttl := 5*time.Second + 2*h.gran
	var inside, overlaps atomic.Int32
	var counter atomic.Int64 // read and written non-atomically below: the lock must protect it
	var wg sync.WaitGroup
	ctx := h.ctx()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				held, err := l.Lock(ctx, r, ttl, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond}))
				if err != nil {
					t.Errorf("worker %d: Lock(r) = %v; want nil", w, err)
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				if !held.Valid() {
					t.Errorf("worker %d: Lock(r) returned a lock already past its validity (%v)", w, held.ValidUntil)
				}
				c := counter.Load()
				time.Sleep(time.Millisecond)
				counter.Store(c + 1)
				inside.Add(-1)
				if err := l.Unlock(ctx, held); err != nil {
					t.Errorf("worker %d: Unlock(r) = %v; want nil", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := overlaps.Load(); n > 0 {
		t.Errorf("a worker entered the critical section while another was inside %d times; want 0", n)
	}
	if got, want := counter.Load(), int64(workers*perWorker); got != want {
		t.Errorf("counter = %d after %d locked increments; want %d: updates were lost", got, want, want)
	}
	for i, s := range stores {
		if ok, err := s.Exists(h.ctx(), r); err != nil || ok {
			t.Errorf("store %d: Exists(r) after every Unlock = %v, %v; want false, nil", i, ok, err)
		}
	}
	if err := l.Shutdown(h.ctx()); err != nil {
		t.Errorf("Shutdown() = %v; want nil", err)
	}
}
