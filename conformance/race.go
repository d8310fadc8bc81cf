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

// Stress rules: races that only happen when calls meet at the wrong
// moment. They run many tries at once, each timed to land in the window.
// On a fake clock they are exact; in real time (stores that talk to a
// server) they hit the window often enough to catch a store that is
// wrong in it.

// pollEvery is the pause between the attempts of a contender that polls.
const pollEvery = time.Millisecond

// releaseRacesExpiry has holder a release its lock around the moment it
// expires, while b polls to take the resource over. Whatever the order,
// b's lock, once granted, must stay b's: a's release may free a's own
// lock or report ErrNotHeld, never delete b's.
func releaseRacesExpiry(t *testing.T, h *harness) {
	tries := raceExpiry(t, h, "Release", h.store.Release)
	if deleted := takenGone(t, h, tries); deleted > 0 {
		t.Fatalf("Release(r, b) = ErrNotHeld for %d of %d resources b took over as a's lock expired, each with a 30s TTL; want nil: a's Release, racing its expiry, deleted b's lock",
			deleted, len(tries))
	}
}

// takenGone releases the locks b took in tries, and returns how many of
// them were gone (ErrNotHeld) though b took them for the long TTL.
func takenGone(t *testing.T, h *harness, tries []*expiryTry) int {
	gone := 0
	for _, tr := range tries {
		if !tr.taken.Load() {
			continue
		}
		if err := h.store.Release(h.ctx(), tr.r, tr.b); errors.Is(err, lock.ErrNotHeld) {
			gone++
		} else if err != nil {
			t.Errorf("Release(r, b) = %v; want nil", err)
		}
	}
	return gone
}

// expiryTry is one try of raceExpiry.
type expiryTry struct {
	r, a, b string
	taken   atomic.Bool // b acquired r
	err     error       // a's call
	at      time.Time   // when a's call returned
}

// raceExpiry makes 2×Contenders tries at once: in each, a takes its own
// resource r for the short TTL, a's call (named name) on r lands at
// random within the granularity and tolerance either side of the expiry,
// and b polls to take r over, for the long TTL, from just before it. It
// checks that a's call reported nil or ErrNotHeld, and returns the tries
// once all are done; the locks b took are released as the rule ends, if
// the rule does not release them.
func raceExpiry(t *testing.T, h *harness, name string, call func(ctx context.Context, r, a string) error) []*expiryTry {
	n := 2 * h.opts.Contenders
	spread := h.gran + h.opts.Tolerance // a's call lands this close to the expiry
	tries := make([]*expiryTry, n)
	for i := range tries {
		tries[i] = &expiryTry{r: h.res(fmt.Sprint("r", i)), a: h.tok("a"), b: h.tok("b")}
	}
	var wg sync.WaitGroup
	for _, tr := range tries {
		start := time.Now()
		h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), tr.r, tr.a, h.ttl))
		callAt := h.ttl - spread + rand.N(2*spread+1)
		wg.Add(2)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(callAt)))
			tr.err = call(h.ctx(), tr.r, tr.a)
			tr.at = time.Now()
		}()
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(h.ttl - spread)))
			for time.Since(start) < h.expiryBound(h.ttl)+spread {
				err := h.store.Acquire(h.ctx(), tr.r, tr.b, h.long)
				if err == nil {
					tr.taken.Store(true)
					h.releasing(tr.r, tr.b, nil)
					return
				}
				if !errors.Is(err, lock.ErrNotAcquired) {
					t.Errorf("Acquire(r, b) = %v; want nil or ErrNotAcquired", err)
					return
				}
				time.Sleep(pollEvery)
			}
		}()
	}
	wg.Wait()
	for _, tr := range tries {
		if tr.err != nil && !errors.Is(tr.err, lock.ErrNotHeld) {
			t.Errorf("%s(r, a) around r's expiry = %v; want nil or ErrNotHeld", name, tr.err)
		}
	}
	return tries
}

// fenceOrder has contenders take one resource in turns with AcquireFenced
// and checks, inside each critical section, that its fence exceeds the
// fence of the critical section before.
func fenceOrder(t *testing.T, h *harness) {
	f := h.store.(lock.Fencer)
	r := h.res("r")
	perWorker := max(h.opts.Rounds/2, 1)
	var last atomic.Uint64 // the fence of the last critical section; the lock orders the accesses
	var wg sync.WaitGroup
	for w := range h.opts.Contenders {
		token := h.tok(fmt.Sprint("w", w))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				var fence uint64
				for {
					var err error
					fence, err = f.AcquireFenced(h.ctx(), r, token, h.long)
					if err == nil {
						break
					}
					if !errors.Is(err, lock.ErrNotAcquired) {
						t.Errorf("AcquireFenced(r, w%d) = %v; want nil or ErrNotAcquired", w, err)
						return
					}
					time.Sleep(rand.N(pollEvery))
				}
				if prev := last.Load(); fence <= prev {
					t.Errorf("AcquireFenced(r, w%d) = fence %d, in a critical section that followed one with fence %d; want fences in the order holders take the lock", w, fence, prev)
				}
				last.Store(fence)
				if err := h.store.Release(h.ctx(), r, token); err != nil {
					t.Errorf("Release(r, w%d) = %v; want nil", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// extendRacesExpiry has holder a extend its lock, to the short TTL,
// around the moment it expires, while b polls to take the resource over.
// Whatever the order, b's lock, once granted, must keep b's TTL: a's
// Extend may extend a's own lock or report ErrNotHeld, never set the TTL
// of b's. A store that checks the token and then sets the TTL in a
// second step (GET, then PEXPIRE) cuts b's lock, taken for 30s, to a's
// short TTL: b's own release, once that TTL has run out, finds it gone.
func extendRacesExpiry(t *testing.T, h *harness) {
	ext := h.store.(lock.Extender)
	tries := raceExpiry(t, h, "Extend", func(ctx context.Context, r, a string) error { return ext.Extend(ctx, r, a, h.ttl) })
	// An extension that set b's lock to the short TTL has run out by now.
	var last time.Time
	for _, tr := range tries {
		if tr.at.After(last) {
			last = tr.at
		}
	}
	time.Sleep(time.Until(last.Add(h.expiryBound(h.ttl))))
	if cut := takenGone(t, h, tries); cut > 0 {
		t.Fatalf("Release(r, b) = ErrNotHeld for %d of %d resources b took over as a's lock expired, each with a %v TTL, %v after a's last Extend(r, a, %v); want nil: a's Extend, racing its expiry, set the TTL of b's lock",
			cut, len(tries), h.long, h.expiryBound(h.ttl), h.ttl)
	}
}
