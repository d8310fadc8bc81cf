package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// The rules of lock.Permitter and lock.PermitWaiter.

// permitLimit is the limit of the permit rules.
const permitLimit = 3

// permitRules are the rules of the native permits.
var permitRules = []rule{
	{name: "PermitLimit", needs: permitter, run: permitContention,
		why: "of concurrent AcquirePermit calls on a free resource exactly limit must win: more is a semaphore that over-admits, fewer one that starves"},
	{name: "PermitReleaseWrongToken", needs: permitter, run: permitReleaseWrongToken,
		why: "only a permit's own token may release it: otherwise a holder whose permit expired frees another's"},
	{name: "PermitReleaseTwice", needs: permitter, run: permitReleaseTwice,
		why: "a second ReleasePermit must report ErrNotHeld, and so must the release of a permit never taken: the lockers tell a lost permit by it"},
	{name: "PermitExpiry", needs: permitter, run: permitExpiry,
		why: "an expired permit must free its place, or a crashed holder keeps it for good"},
	{name: "PermitLives", needs: permitter, run: permitLives,
		why: "a permit must be held until its TTL (less the granularity) has run out, whether AcquirePermit or ExtendPermit set it, a TTL of several seconds and fractions of a second too: a store that expires permits early lets a semaphore admit a holder past its limit while the holder it replaced still counts on its place"},
	{name: "PermitPartialExpiry", needs: permitter, run: permitPartialExpiry,
		why: "a permit that expires must free its place while the others are still held: a store that keeps expired permits until the last one goes (one TTL on the whole set, refreshed by each acquisition) keeps a crashed holder's place as long as anyone else comes"},
	{name: "PermitLimitAfterExpiry", needs: permitter, run: permitLimitAfterExpiry,
		why: "the limit binds only while permits taken under it are held: a store that remembers the limit of expired permits refuses, with ErrLimitMismatch, every semaphore of that name whose limit was changed"},
	{name: "PermitCanceledContext", needs: permitter, run: permitCanceledContext,
		why: "a permit call whose context is canceled must report the context's error, never ErrNotAcquired, ErrLimitMismatch or ErrNotHeld: the lockers clean up by token only after an error they cannot read as an outcome"},
	{name: "PermitExpiredDeadline", needs: permitter, run: permitExpiredDeadline,
		why: "a permit call whose deadline has passed must report context.DeadlineExceeded, never an outcome it did not observe"},
	{name: "PermitLimitMismatch", needs: permitter, run: permitLimitMismatch,
		why: "a caller with another limit must get ErrLimitMismatch and change nothing while permits are held: admitting it silently lets more holders in than the first callers allow"},
	{name: "PermitExtend", needs: permitter, run: permitExtend,
		why: "ExtendPermit must keep the permit for the new TTL, refuse a wrong token, and never re-create an expired permit: lock.Run relies on all three"},
	{name: "PermitExtendShortens", needs: permitter, run: permitExtendShortens,
		why: "ExtendPermit sets the TTL from now, a shorter one too: a store that only ever lengthens keeps permits longer than their holders asked"},
	{name: "PermitNamespace", needs: permitter, run: permitNamespace,
		why: "permits and locks live apart: a permit on r and a lock on r must not exclude each other, or a semaphore and a lock of one name block each other"},
	{name: "PermitFences", needs: permitter, run: permitFences,
		why: "a permit's fence must exceed the fence of every permit granted before on the resource, when the store fences"},
	{name: "WaitPermit", needs: permitWaiter, run: waitPermit,
		why: "WaitPermit must return at once while a permit is free, block while all are held, and return when one is released, or waiting semaphores spin or sleep"},
	{name: "WaitPermitPartlyHeld", needs: permitWaiter, run: waitPermitPartlyHeld,
		why: "WaitPermit must return at once while a permit is free, some others held or not: a store that waits whenever a permit is held makes a semaphore with free places sleep until someone leaves"},
	{name: "WaitPermitIgnoresOtherResources", needs: permitWaiter, run: waitPermitIgnoresOtherResources,
		why: "WaitPermit must not return for a permit released on another resource, or every release wakes every waiting semaphore: a stampede"},
	{name: "WaitPermitWakesOnExpiry", needs: permitWaiter, run: waitPermitWakesOnExpiry,
		why: "WaitPermit must return when a permit expires, or waiting semaphores sleep past the death of a holder that never released"},
	{name: "WaitPermitHonoursContext", needs: permitWaiter, run: waitPermitHonoursContext,
		why: "WaitPermit must return the context's error when its context ends, or a semaphore's Lock outlives its caller's deadline"},
}

var (
	permitter    = needs[lock.Permitter]("lock.Permitter")
	permitWaiter = needs[lock.PermitWaiter]("lock.PermitWaiter")
)

func (h *harness) permits() lock.Permitter { return h.store.(lock.Permitter) }

// heldPermits calls Permits and fails the rule on error.
func (h *harness) heldPermits(resource string) int {
	h.t.Helper()
	n, err := h.permits().Permits(h.ctx(), resource)
	if err != nil {
		h.t.Fatalf("Permits(%s) = %v; want nil", h.name(resource), err)
	}
	return n
}

// wantPermits fails the rule unless resource has want permits held.
func (h *harness) wantPermits(resource string, want int, when string) {
	h.t.Helper()
	if n := h.heldPermits(resource); n != want {
		h.t.Fatalf("Permits(%s) %s = %d; want %d", h.name(resource), when, n, want)
	}
}

// acquirePermit calls AcquirePermit with the rule's limit; the permit is
// released when the rule ends.
func (h *harness) acquirePermit(resource, token string, ttl time.Duration) error {
	_, err := h.permits().AcquirePermit(h.ctx(), resource, token, permitLimit, ttl)
	return h.releasingPermit(resource, token, err)
}

// fillPermits takes every permit on resource, with tokens named owner0…
func (h *harness) fillPermits(resource, owner string, ttl time.Duration) []string {
	h.t.Helper()
	var tokens []string
	for i := range permitLimit {
		tok := h.tok(fmt.Sprint(owner, i))
		h.must(fmt.Sprintf("AcquirePermit(r, %s%d, limit %d) with %d of %d held", owner, i, permitLimit, i, permitLimit), h.acquirePermit(resource, tok, ttl))
		tokens = append(tokens, tok)
	}
	return tokens
}

func permitContention(t *testing.T, h *harness) {
	r := h.res("r")
	n := max(h.opts.Contenders, permitLimit+1)
	for round := range h.opts.Rounds {
		tokens := make([]string, n)
		errs := make([]error, n)
		for i := range tokens {
			tokens[i] = h.tok(fmt.Sprintf("c%d", i))
		}
		ctx := h.ctx()
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = h.permits().AcquirePermit(ctx, r, tokens[i], permitLimit, h.long)
			})
		}
		close(start)
		wg.Wait()
		var winners []string
		for i, err := range errs {
			switch {
			case err == nil:
				winners = append(winners, tokens[i])
			case !errors.Is(err, lock.ErrNotAcquired):
				t.Fatalf("round %d: AcquirePermit(r, c%d, limit %d) = %v; want nil or ErrNotAcquired", round, i, permitLimit, err)
			}
		}
		if len(winners) != permitLimit {
			t.Fatalf("round %d: %d of %d concurrent AcquirePermit(r, …, limit %d) calls succeeded; want exactly %d", round, len(winners), n, permitLimit, permitLimit)
		}
		h.wantPermits(r, permitLimit, fmt.Sprintf("in round %d", round))
		for _, tok := range winners {
			h.must(fmt.Sprintf("round %d: ReleasePermit(r, winner)", round), h.permits().ReleasePermit(h.ctx(), r, tok))
		}
		h.wantPermits(r, 0, fmt.Sprintf("after every winner of round %d released", round))
	}
}

func permitReleaseWrongToken(t *testing.T, h *harness) {
	r := h.res("r")
	tokens := h.fillPermits(r, "a", h.long)
	h.want("ReleasePermit(r, wrongToken)", h.permits().ReleasePermit(h.ctx(), r, h.tok("wrong")), lock.ErrNotHeld)
	h.wantPermits(r, permitLimit, "after ReleasePermit(r, wrongToken)")
	h.want(fmt.Sprintf("AcquirePermit(r, b, limit %d) after ReleasePermit(r, wrongToken)", permitLimit), h.acquirePermit(r, h.tok("b"), h.long), lock.ErrNotAcquired)
	h.must("ReleasePermit(r, a0)", h.permits().ReleasePermit(h.ctx(), r, tokens[0]))
	h.wantPermits(r, permitLimit-1, "after ReleasePermit(r, a0)")
}

func permitReleaseTwice(t *testing.T, h *harness) {
	r := h.res("r")
	a := h.tok("a")
	h.want("ReleasePermit(r, a) of a permit never taken", h.permits().ReleasePermit(h.ctx(), r, a), lock.ErrNotHeld)
	h.must("AcquirePermit(r, a)", h.acquirePermit(r, a, h.long))
	h.must("ReleasePermit(r, a)", h.permits().ReleasePermit(h.ctx(), r, a))
	h.want("ReleasePermit(r, a) a second time", h.permits().ReleasePermit(h.ctx(), r, a), lock.ErrNotHeld)
	h.wantPermits(r, 0, "after ReleasePermit(r, a)")
}

func permitExpiry(t *testing.T, h *harness) {
	r := h.res("r")
	set := time.Now()
	h.fillPermits(r, "a", h.ttl)
	h.want(fmt.Sprintf("AcquirePermit(r, b, limit %d) with every permit held", permitLimit), h.acquirePermit(r, h.tok("b"), h.long), lock.ErrNotAcquired)
	h.waitPermitsExpired(r, set, h.ttl, fmt.Sprintf("%d permits were taken", permitLimit))
	h.must("AcquirePermit(r, b) after every permit expired", h.acquirePermit(r, h.tok("b"), h.long))
}

// waitPermitsExpired waits until no permit is held on resource, and fails
// the rule if some still is past the expiry bound of ttl from set, when
// what happened.
func (h *harness) waitPermitsExpired(resource string, set time.Time, ttl time.Duration, what string) {
	h.t.Helper()
	h.waitPermitsFall(resource, 0, set, ttl, what)
}

// waitPermitsFall waits until no more than left permits are held on
// resource, and fails the rule if more still are past the expiry bound of
// ttl from set, when what happened.
func (h *harness) waitPermitsFall(resource string, left int, set time.Time, ttl time.Duration, what string) {
	h.t.Helper()
	for {
		sent := time.Since(set)
		n := h.heldPermits(resource)
		if n <= left {
			return
		}
		if sent > h.expiryBound(ttl) {
			h.t.Fatalf("Permits(%s) = %d %v after %s with ttl %v; want %d: the permits did not expire", h.name(resource), n, sent.Round(time.Millisecond), what, ttl, left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func permitLimitMismatch(t *testing.T, h *harness) {
	r := h.res("r")
	a, b := h.tok("a"), h.tok("b")
	h.must("AcquirePermit(r, a, limit 3)", h.acquirePermit(r, a, h.long))
	_, err := h.permits().AcquirePermit(h.ctx(), r, b, permitLimit+1, h.long)
	h.want(fmt.Sprintf("AcquirePermit(r, b, limit %d) while a holds a permit taken with limit %d", permitLimit+1, permitLimit), err, lock.ErrLimitMismatch)
	h.wantPermits(r, 1, "after a refused AcquirePermit with another limit")
	h.want("ReleasePermit(r, b) after b was refused", h.permits().ReleasePermit(h.ctx(), r, b), lock.ErrNotHeld)
	h.must("ReleasePermit(r, a)", h.permits().ReleasePermit(h.ctx(), r, a))
	_, err = h.permits().AcquirePermit(h.ctx(), r, b, permitLimit+1, h.long)
	h.must(fmt.Sprintf("AcquirePermit(r, b, limit %d) once no permit is held", permitLimit+1), h.releasingPermit(r, b, err))
}

func permitExtend(t *testing.T, h *harness) {
	r := h.res("r")
	a := h.tok("a")
	h.must("AcquirePermit(r, a)", h.acquirePermit(r, a, h.ttl))
	h.want("ExtendPermit(r, wrongToken)", h.permits().ExtendPermit(h.ctx(), r, h.tok("wrong"), h.long), lock.ErrNotHeld)
	h.wantPermits(r, 1, "after ExtendPermit(r, wrongToken)")
	start := time.Now()
	h.must("ExtendPermit(r, a, 30s)", h.permits().ExtendPermit(h.ctx(), r, a, h.long))
	time.Sleep(h.expiryBound(h.ttl) - time.Since(start))
	h.wantPermits(r, 1, fmt.Sprintf("after ExtendPermit(r, a, %v), past the first TTL of %v", h.long, h.ttl))

	b := h.tok("b")
	set := time.Now()
	h.must("AcquirePermit(r, b)", h.acquirePermit(r, b, h.ttl))
	time.Sleep(h.expiryBound(h.ttl) - time.Since(set))
	h.want("ExtendPermit(r, b) after b's permit expired", h.permits().ExtendPermit(h.ctx(), r, b, h.long), lock.ErrNotHeld)
	h.wantPermits(r, 1, "after ExtendPermit of an expired permit: it must not be re-created")
}

func permitNamespace(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a): a lock", h.releasing(r, a, h.store.Acquire(h.ctx(), r, a, h.long)))
	h.must("AcquirePermit(r, b) while a lock holds r", h.acquirePermit(r, h.tok("b"), h.long))
	h.wantPermits(r, 1, "with one permit and one lock on r")
	q := h.res("q")
	h.fillPermits(q, "p", h.long)
	if h.exists(q) {
		t.Fatal("Exists(q) = true while only permits are held on q, no lock; want false: a permit is not a lock")
	}
	c := h.tok("c")
	h.must("Acquire(q, c): a lock, while every permit on q is held", h.releasing(q, c, h.store.Acquire(h.ctx(), q, c, h.long)))
}

func permitFences(t *testing.T, h *harness) {
	r := h.res("r")
	var last uint64
	// acquire takes a permit and checks its fence; when, if not empty,
	// says what came before it.
	acquire := func(owner, when string, ttl time.Duration) string {
		tok := h.tok(owner)
		fence, err := h.permits().AcquirePermit(h.ctx(), r, tok, permitLimit, ttl)
		h.must(fmt.Sprintf("AcquirePermit(r, %s)%s", owner, when), h.releasingPermit(r, tok, err))
		switch {
		case fence == 0 && last == 0:
			t.Skip("the store does not fence permits (fence 0)")
		case fence <= last:
			t.Fatalf("AcquirePermit(r, %s)%s = fence %d; want a fence > %d", owner, when, fence, last)
		}
		last = fence
		return tok
	}
	var held []string
	for i := range 2*permitLimit - 1 { // permits 0, 2, 4 stay held
		owner := fmt.Sprint("a", i)
		tok := acquire(owner, "", h.long)
		if i%2 == 1 {
			h.must(fmt.Sprintf("ReleasePermit(r, %s)", owner), h.permits().ReleasePermit(h.ctx(), r, tok))
		} else {
			held = append(held, tok)
		}
	}
	// Once no permit is left, by release or expiry, the resource's fences
	// go on: a store that drops its counter with the last permit repeats
	// fences.
	for _, tok := range held {
		h.must("ReleasePermit(r, a…) of a permit still held", h.permits().ReleasePermit(h.ctx(), r, tok))
	}
	set := time.Now()
	acquire("b", " after every permit was released", h.ttl)
	h.waitPermitsExpired(r, set, h.ttl, "b's permit was taken")
	acquire("c", " after every permit expired", h.long)
}

func waitPermit(t *testing.T, h *harness) {
	w := h.store.(lock.PermitWaiter)
	r := h.res("r")
	ctx, cancel := context.WithTimeout(h.ctx(), h.expiryBound(h.ttl))
	h.must("WaitPermit(r) with no permit held", w.WaitPermit(ctx, r))
	cancel()
	tokens := h.fillPermits(r, "a", h.long)
	done := startWaitPermit(h, h.ctx(), r)
	h.settle()
	stillWaitingPermit(t, done, "while every permit is held; want it to block until one is released")
	h.must("ReleasePermit(r, a0)", h.permits().ReleasePermit(h.ctx(), r, tokens[0]))
	awaitWaitPermit(t, h, done)
}

func waitPermitIgnoresOtherResources(t *testing.T, h *harness) {
	r, other := h.res("r"), h.res("other")
	mine := h.fillPermits(r, "a", h.long)
	theirs := h.fillPermits(other, "b", h.long)
	done := startWaitPermit(h, h.ctx(), r)
	h.settle()
	h.must("ReleasePermit(other, b0)", h.permits().ReleasePermit(h.ctx(), other, theirs[0]))
	h.settle()
	stillWaitingPermit(t, done, "after ReleasePermit(other, b0), while every permit of r is still held; want it to block until one of r's is released")
	h.must("ReleasePermit(r, a0)", h.permits().ReleasePermit(h.ctx(), r, mine[0]))
	awaitWaitPermit(t, h, done)
}

// startWaitPermit runs WaitPermit(r) with ctx in a goroutine and returns its result
// channel.
func startWaitPermit(h *harness, ctx context.Context, r string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- h.store.(lock.PermitWaiter).WaitPermit(ctx, r) }()
	return done
}

// stillWaitingPermit fails the rule if a WaitPermit started with
// startWaitPermit has returned; what says when, and what was wanted.
func stillWaitingPermit(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("WaitPermit(r) returned %v %s", errString(err), what)
	default:
	}
}

// awaitWaitPermit waits for a WaitPermit started with startWaitPermit to
// return nil after ReleasePermit(r, a0).
func awaitWaitPermit(t *testing.T, h *harness, done <-chan error) {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case err := <-done:
		h.must("WaitPermit(r) after ReleasePermit(r, a0)", err)
	case <-timer.C:
		t.Fatalf("WaitPermit(r) still blocked %v after ReleasePermit(r, a0); want it to return nil", waitLimit)
	}
}

// waitPermitPartlyHeld: WaitPermit returns at once while a permit is
// free, with some of them held too: a semaphore with a free place must
// not sleep until someone leaves.
func waitPermitPartlyHeld(t *testing.T, h *harness) {
	w := h.store.(lock.PermitWaiter)
	r := h.res("r")
	for held := 1; held < permitLimit; held++ {
		tok := h.tok(fmt.Sprint("a", held))
		h.must(fmt.Sprintf("AcquirePermit(r, a%d, limit %d) with %d of %d held", held, permitLimit, held-1, permitLimit), h.acquirePermit(r, tok, h.long))
		ctx, cancel := context.WithTimeout(h.ctx(), h.expiryBound(h.ttl))
		err := w.WaitPermit(ctx, r)
		cancel()
		if err != nil {
			t.Fatalf("WaitPermit(r) with %d of %d permits held = %v; want nil at once: a permit is free", held, permitLimit, err)
		}
	}
}

// The permit rules run after the Start rules, the semaphore and
// read-write lock rules before the lockers' rules, which stay last.
func init() {
	i := slices.IndexFunc(rules, func(r rule) bool { return r.name == "SingleLocker" })
	rules = slices.Insert(rules, i, append(slices.Clone(permitRules), semaphoreRules...)...)
}
