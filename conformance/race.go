package conformance

import (
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
	n := 2 * h.opts.Contenders
	spread := h.gran + h.opts.Tolerance // a's release lands this close to the expiry
	type try struct {
		r, a, b     string
		taken       atomic.Bool // b acquired r
		releasedErr error       // a's release
	}
	tries := make([]*try, n)
	for i := range tries {
		tries[i] = &try{r: h.res(fmt.Sprint("r", i)), a: h.tok("a"), b: h.tok("b")}
	}
	var wg sync.WaitGroup
	for _, tr := range tries {
		start := time.Now()
		h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), tr.r, tr.a, h.ttl))
		releaseAt := h.ttl - spread + rand.N(2*spread+1)
		wg.Add(2)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(releaseAt)))
			tr.releasedErr = h.store.Release(h.ctx(), tr.r, tr.a)
		}()
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(h.ttl - spread)))
			for time.Since(start) < h.expiryBound(h.ttl)+spread {
				err := h.store.Acquire(h.ctx(), tr.r, tr.b, h.long)
				if err == nil {
					tr.taken.Store(true)
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
	deleted := 0
	for _, tr := range tries {
		if tr.releasedErr != nil && !errors.Is(tr.releasedErr, lock.ErrNotHeld) {
			t.Errorf("Release(r, a) around r's expiry = %v; want nil or ErrNotHeld", tr.releasedErr)
		}
		if !tr.taken.Load() {
			continue
		}
		if err := h.store.Release(h.ctx(), tr.r, tr.b); errors.Is(err, lock.ErrNotHeld) {
			deleted++
		} else if err != nil {
			t.Errorf("Release(r, b) = %v; want nil", err)
		}
	}
	if deleted > 0 {
		t.Fatalf("Release(r, b) = ErrNotHeld for %d of %d resources b took over as a's lock expired, each with a 30s TTL; want nil: a's Release, racing its expiry, deleted b's lock",
			deleted, n)
	}
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
	n := 2 * h.opts.Contenders
	spread := h.gran + h.opts.Tolerance // a's extension lands this close to the expiry
	type try struct {
		r, a, b    string
		taken      atomic.Bool // b acquired r
		extendErr  error       // a's extension
		extendedAt time.Time   // when a's extension returned
	}
	tries := make([]*try, n)
	for i := range tries {
		tries[i] = &try{r: h.res(fmt.Sprint("r", i)), a: h.tok("a"), b: h.tok("b")}
	}
	var wg sync.WaitGroup
	for _, tr := range tries {
		start := time.Now()
		h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), tr.r, tr.a, h.ttl))
		extendAt := h.ttl - spread + rand.N(2*spread+1)
		wg.Add(2)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(extendAt)))
			tr.extendErr = ext.Extend(h.ctx(), tr.r, tr.a, h.ttl)
			tr.extendedAt = time.Now()
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
	// An extension that set b's lock to the short TTL has run out by now.
	var last time.Time
	for _, tr := range tries {
		if tr.extendErr != nil && !errors.Is(tr.extendErr, lock.ErrNotHeld) {
			t.Errorf("Extend(r, a, %v) around r's expiry = %v; want nil or ErrNotHeld", h.ttl, tr.extendErr)
		}
		if tr.extendedAt.After(last) {
			last = tr.extendedAt
		}
	}
	time.Sleep(time.Until(last.Add(h.expiryBound(h.ttl))))
	cut := 0
	for _, tr := range tries {
		if !tr.taken.Load() {
			continue
		}
		if err := h.store.Release(h.ctx(), tr.r, tr.b); errors.Is(err, lock.ErrNotHeld) {
			cut++
		} else if err != nil {
			t.Errorf("Release(r, b) = %v; want nil", err)
		}
	}
	if cut > 0 {
		t.Fatalf("Release(r, b) = ErrNotHeld for %d of %d resources b took over as a's lock expired, each with a %v TTL, %v after a's last Extend(r, a, %v); want nil: a's Extend, racing its expiry, set the TTL of b's lock",
			cut, n, h.long, h.expiryBound(h.ttl), h.ttl)
	}
}
