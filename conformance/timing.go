package conformance

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// The rules of time: expiry, extension, and what TTL reports. Each checks
// that a lock lives long enough (its TTL less the granularity and a
// tolerance) and not too long.

func expiry(t *testing.T, h *harness) {
	r, a := h.res("r"), h.tok("a")
	start := time.Now()
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	set := time.Now()
	if !h.exists(r) {
		t.Fatalf("Exists(r) = false right after Acquire(r, a, %v); want true", h.ttl)
	}
	held, after, err := h.lasts(r, start, h.ttl)
	h.must("Exists(r)", err)
	if !held {
		t.Fatalf("Exists(r) = false %v after Acquire(r, a, %v) (granularity %v); want true: the lock expired early",
			after.Round(time.Millisecond), h.ttl, h.gran)
	}
	h.waitExpired(r, set, h.ttl)
	b := h.tok("b")
	h.must("Acquire(r, b) after r expired", h.releasing(r, b, h.store.Acquire(h.ctx(), r, b, h.long)))
}

// acquireNearExpiry has contender b try to take r, held by a, again and
// again until a's lock has lived its TTL less the granularity: every
// attempt answered before then must be refused, those of the lock's last
// moments too; one answered later may take r. Timing each attempt from
// just before a's Acquire was sent to just after b's was answered keeps a
// slow machine from failing a correct store.
func acquireNearExpiry(t *testing.T, h *harness) {
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	life := h.ttl - h.gran // the least a's lock lives
	start := time.Now()
	h.must(fmt.Sprintf("Acquire(r, a, %v)", h.ttl), h.store.Acquire(h.ctx(), r, a, h.ttl))
	every := max(life/50, time.Millisecond)
	for {
		err := h.store.Acquire(h.ctx(), r, b, h.long)
		after := time.Since(start)
		switch {
		case err == nil && after < life:
			t.Fatalf("Acquire(r, b) answered %v after Acquire(r, a, %v) was sent = nil (granularity %v); want ErrNotAcquired: a holds r until %v, and b took it over before then",
				after.Round(time.Millisecond), h.ttl, h.gran, life)
		case err == nil: // a's lock may have expired: b holds r
			h.must("Release(r, b)", h.store.Release(h.ctx(), r, b))
			return
		case !errors.Is(err, lock.ErrNotAcquired):
			t.Fatalf("Acquire(r, b) %v after Acquire(r, a, %v) = %v; want ErrNotAcquired, or nil once a's lock expired", after.Round(time.Millisecond), h.ttl, err)
		case after >= life:
			return
		}
		time.Sleep(min(every, time.Until(start.Add(life))))
	}
}

// longTTL sets a TTL of several seconds with every call that sets one,
// all at once, and checks that each lock lives that long (less the
// granularity) and that TTL reports it from the start. The TTL is not a
// whole number of seconds, so that a store that truncates TTLs of a
// second or more to whole seconds (EXPIRE for long ones, PEXPIRE for
// short ones) shows. The checks run together, so the rule takes one such
// TTL.
func longTTL(t *testing.T, h *harness) {
	ttl := 5500*time.Millisecond + 2*h.gran
	refused := ttlSetter{what: fmt.Sprintf("Acquire(r, b, %v) refused while a held r with that TTL", h.ttl), set: func(r, a string) error {
		if err := h.store.Acquire(h.ctx(), r, a, ttl); err != nil {
			return err
		}
		if err := h.store.Acquire(h.ctx(), r, a+"-b", h.ttl); !errors.Is(err, lock.ErrNotAcquired) {
			return verdict(fmt.Sprintf("Acquire(r, b) while a holds r = %v; want ErrNotAcquired", errString(err)))
		}
		return nil
	}}
	checks := append(h.ttlSetters(ttl), refused)

	var wg sync.WaitGroup
	for i, c := range checks {
		r, a := h.res(fmt.Sprint("r", i)), h.tok("a")
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			if err := c.set(r, a); err != nil {
				if v, ok := err.(verdict); ok {
					t.Errorf("%s: %s", c.what, v)
				} else {
					t.Errorf("%s = %v; want nil", c.what, err)
				}
				return
			}
			if msg := h.checkTTL(r, start, ttl); msg != "" {
				t.Errorf("after %s: %s", c.what, msg)
			}
			held, after, err := h.lasts(r, start, ttl)
			switch {
			case err != nil:
				t.Errorf("Exists(r) %v after %s = %v; want nil", after.Round(time.Millisecond), c.what, err)
			case !held:
				t.Errorf("Exists(r) = false %v after %s (granularity %v); want true until %v: the lock expired early",
					after.Round(time.Millisecond), c.what, h.gran, ttl-h.gran)
			default:
				// The lock lived its TTL less the granularity, and may be
				// gone by now.
				if err := h.store.Release(h.ctx(), r, a); err != nil && !errors.Is(err, lock.ErrNotHeld) {
					t.Errorf("Release(r, a) %v after %s = %v; want nil, or ErrNotHeld once its TTL could have run out", after.Round(time.Millisecond), c.what, err)
				}
			}
		}()
	}
	wg.Wait()
}

// ttlSetter is a call that sets a TTL: set sets r's TTL to the TTL the
// setter was made for, holding r under a.
type ttlSetter struct {
	what    string
	extends bool // set first takes r for the harness's TTL, then extends it
	set     func(r, a string) error
}

// ttlSetters returns every call of the store that sets a TTL, each setting
// ttl: Acquire, and where the store can, AcquireFenced, Extend (of a lock
// taken for the harness's TTL) and their Starts.
func (h *harness) ttlSetters(ttl time.Duration) []ttlSetter {
	ext, extends := h.store.(lock.Extender)
	fencer, fences := h.store.(lock.Fencer)
	_, starts := h.store.(lock.Starter)
	setters := []ttlSetter{{fmt.Sprintf("Acquire(r, a, %v)", ttl), false, func(r, a string) error {
		return h.store.Acquire(h.ctx(), r, a, ttl)
	}}}
	if fences {
		setters = append(setters, ttlSetter{fmt.Sprintf("AcquireFenced(r, a, %v)", ttl), false, func(r, a string) error {
			_, err := fencer.AcquireFenced(h.ctx(), r, a, ttl)
			return err
		}})
	}
	if extends {
		setters = append(setters, ttlSetter{fmt.Sprintf("Extend(r, a, %v) of a lock taken for %v", ttl, h.ttl), true, func(r, a string) error {
			if err := h.store.Acquire(h.ctx(), r, a, h.ttl); err != nil {
				return err
			}
			return ext.Extend(h.ctx(), r, a, ttl)
		}})
	}
	if starts {
		started := func(op lock.CallOp) ttlSetter {
			return ttlSetter{fmt.Sprintf("Start(%v r, a, %v)", op, ttl), op == lock.CallExtend, func(r, a string) error {
				if op == lock.CallExtend {
					if err := h.store.Acquire(h.ctx(), r, a, h.ttl); err != nil {
						return err
					}
				}
				_, err := h.start(h.ctx(), lock.Call{Op: op, Resource: r, Token: a, TTL: ttl})
				return err
			}}
		}
		setters = append(setters, started(lock.CallAcquire))
		if fences {
			setters = append(setters, started(lock.CallAcquireFenced))
		}
		if extends {
			setters = append(setters, started(lock.CallExtend))
		}
	}
	return setters
}

// maxTTL sets lock.MaxTTL, the longest TTL a locker asks for, with every
// call that sets a TTL, and reads it back: each call must keep it, or
// refuse it with ErrInvalid and leave the resource as it was. Waiting out
// such a TTL is out of the question, so the rule needs a TTL reader.
func maxTTL(t *testing.T, h *harness) {
	for i, c := range h.ttlSetters(lock.MaxTTL) {
		r, a := h.res(fmt.Sprint("r", i)), h.tok("a")
		start := time.Now()
		err := c.set(r, a)
		switch {
		case errors.Is(err, lock.ErrInvalid) && c.extends:
			// Refused: the lock taken for the harness's TTL is as it was.
			if msg := h.checkTTL(r, start, h.ttl); msg != "" {
				t.Errorf("after %s was refused: %s", c.what, msg)
			}
		case errors.Is(err, lock.ErrInvalid):
			if h.exists(r) {
				t.Errorf("%s = %v, yet Exists(r) = true; want a refused call to leave r free", c.what, err)
			}
			continue
		case err != nil:
			t.Errorf("%s = %v; want nil, or ErrInvalid if the store cannot keep such a TTL", c.what, err)
			continue
		default:
			if msg := h.checkTTL(r, start, lock.MaxTTL); msg != "" {
				t.Errorf("after %s: %s: the store does not keep the longest TTL a locker asks for", c.what, msg)
			}
		}
		h.must(fmt.Sprintf("Release(r, a) after %s", c.what), h.store.Release(h.ctx(), r, a))
	}
}

// checkTTL reads the TTL of resource, set to ttl at start, if the store
// can, and says what is wrong with it: it must be held, with at least ttl
// less the granularity, the tolerance and the time since start left, and
// at most ttl plus the granularity and the tolerance, by which a lock may
// outlive its TTL (a store whose leases count whole seconds keeps a lock
// of 5.5s for 6s, and may say so).
func (h *harness) checkTTL(resource string, start time.Time, ttl time.Duration) string {
	tr, ok := h.store.(lock.TTLReader)
	if !ok {
		return ""
	}
	left, held, err := tr.TTL(h.ctx(), resource)
	lo := ttl - h.gran - h.opts.Tolerance - time.Since(start)
	hi := ttl + h.gran + h.opts.Tolerance
	if err != nil || !held || left < lo || left > hi {
		return fmt.Sprintf("TTL(%s) = %v, %v, %v; want %v ≤ remaining ≤ %v, true, nil", h.name(resource), left, held, errString(err), lo.Round(time.Millisecond), hi)
	}
	return ""
}

// acquireHeldKeepsExpiry: a refused Acquire (or AcquireFenced), by another
// owner or by the holder itself, neither stretches nor shortens the
// holder's lock.
func acquireHeldKeepsExpiry(t *testing.T, h *harness) {
	type attempt struct {
		name    string
		acquire func(r, token string, ttl time.Duration) error
	}
	attempts := []attempt{{"Acquire", func(r, token string, ttl time.Duration) error {
		return h.store.Acquire(h.ctx(), r, token, ttl)
	}}}
	if f, ok := h.store.(lock.Fencer); ok {
		attempts = append(attempts, attempt{"AcquireFenced", func(r, token string, ttl time.Duration) error {
			_, err := f.AcquireFenced(h.ctx(), r, token, ttl)
			return err
		}})
	}
	type held struct {
		r, a, what string
		start      time.Time
	}
	var short, long []held
	for _, at := range attempts {
		// b is another owner, a the holder itself.
		for _, who := range []string{"b", "a"} {
			// contender returns the token of the refused Acquire on a
			// resource that holder holds.
			contender := func(holder string) string {
				if who == "a" {
					return holder
				}
				return h.tok("b")
			}
			r, a := h.res(at.name+"-"+who+"-short"), h.tok("a")
			h.must(fmt.Sprintf("%s(r, a, %v)", at.name, h.ttl), at.acquire(r, a, h.ttl))
			what := fmt.Sprintf("%s(r, %s, %v) while a holds r with ttl %v", at.name, who, h.long, h.ttl)
			h.want(what, at.acquire(r, contender(a), h.long), lock.ErrNotAcquired)
			short = append(short, held{r, a, what, time.Now()})

			r, a = h.res(at.name+"-"+who+"-long"), h.tok("a")
			h.must(fmt.Sprintf("%s(r, a, %v)", at.name, h.long), at.acquire(r, a, h.long))
			what = fmt.Sprintf("%s(r, %s, %v) while a holds r with ttl %v", at.name, who, h.ttl, h.long)
			start := time.Now()
			h.want(what, at.acquire(r, contender(a), h.ttl), lock.ErrNotAcquired)
			long = append(long, held{r, a, what, start})
		}
	}
	for _, s := range short {
		if ok, after := h.expires(s.r, s.start, h.ttl); !ok {
			t.Fatalf("Exists(r) = true %v after a locked r with ttl %v and %s was refused; want false: the refused acquisition stretched a's lock",
				after.Round(time.Millisecond), h.ttl, s.what)
		}
	}
	for _, l := range long {
		time.Sleep(time.Until(l.start.Add(h.expiryBound(h.ttl))))
		if !h.exists(l.r) {
			t.Fatalf("Exists(r) = false %v after %s was refused; want true: the refused acquisition shortened a's lock",
				time.Since(l.start).Round(time.Millisecond), l.what)
		}
		h.must("Release(r, a)", h.store.Release(h.ctx(), l.r, l.a))
	}
}

func extendOwner(t *testing.T, h *harness) {
	ext := h.store.(lock.Extender)
	r, a := h.res("r"), h.tok("a")
	start := time.Now()
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.must("Extend(r, a) by its owner", ext.Extend(h.ctx(), r, a, h.long))
	if msg := h.checkTTL(r, start, h.long); msg != "" {
		t.Fatalf("after Extend(r, a, %v): %s", h.long, msg)
	}
	time.Sleep(time.Until(start.Add(h.expiryBound(h.ttl))))
	if !h.exists(r) {
		t.Fatalf("Exists(r) = false after the first TTL (%v) ran out, though Extend(r, a, %v) = nil; want true", h.ttl, h.long)
	}
	h.must("Release(r, a) after Extend", h.store.Release(h.ctx(), r, a))
}

func extendShortens(t *testing.T, h *harness) {
	ext := h.store.(lock.Extender)
	r, a := h.res("r"), h.tok("a")
	h.must(fmt.Sprintf("Acquire(r, a, %v)", h.long), h.store.Acquire(h.ctx(), r, a, h.long))
	h.must(fmt.Sprintf("Extend(r, a, %v)", h.ttl), ext.Extend(h.ctx(), r, a, h.ttl))
	if ok, after := h.expires(r, time.Now(), h.ttl); !ok {
		t.Fatalf("Exists(r) = true %v after Extend(r, a, %v) of a lock taken for %v; want false: Extend did not shorten the lock",
			after.Round(time.Millisecond), h.ttl, h.long)
	}
}

func extendWrongToken(t *testing.T, h *harness) {
	ext := h.store.(lock.Extender)
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	set := time.Now()
	h.want("Extend(r, wrongToken)", ext.Extend(h.ctx(), r, h.tok("wrong"), h.long), lock.ErrNotHeld)
	h.waitExpired(r, set, h.ttl) // the wrong token must not have extended it
}

func extendAfterExpiry(t *testing.T, h *harness) {
	ext := h.store.(lock.Extender)
	r, a := h.res("r"), h.tok("a")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.waitExpired(r, time.Now(), h.ttl)
	h.want("Extend(r, a) after r expired", ext.Extend(h.ctx(), r, a, h.long), lock.ErrNotHeld)
	if h.exists(r) {
		t.Fatal("Exists(r) = true after Extend(r, a) of an expired lock; want false: Extend re-created an expired lock")
	}
}

func extendAfterTakeover(t *testing.T, h *harness) {
	ext := h.store.(lock.Extender)
	r, a, b := h.res("r"), h.tok("a"), h.tok("b")
	h.must("Acquire(r, a)", h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.waitExpired(r, time.Now(), h.ttl)
	h.must("Acquire(r, b) after a's lock expired", h.store.Acquire(h.ctx(), r, b, h.long))
	h.want("Extend(r, a) after b took r over", ext.Extend(h.ctx(), r, a, h.long), lock.ErrNotHeld)
	h.must("Release(r, b): b must still hold r", h.store.Release(h.ctx(), r, b))
}

// ttlQuery: TTL says free for a resource never locked, released or
// expired, and tells a held lock's remaining time from above and below:
// not rounded up past the granularity, and counting down (a store that
// answers the TTL last set, or rounds a short one up to a second, fails).
func ttlQuery(t *testing.T, h *harness) {
	tr := h.store.(lock.TTLReader)
	free := func(r, when string) {
		t.Helper()
		if d, held, err := tr.TTL(h.ctx(), r); err != nil || held {
			t.Fatalf("TTL(r) %s = %v, %v, %v; want held = false, nil", when, d, held, errString(err))
		}
	}
	r, a := h.res("r"), h.tok("a")
	free(r, "of a resource never locked")
	start := time.Now()
	h.must(fmt.Sprintf("Acquire(r, a, %v)", h.long), h.store.Acquire(h.ctx(), r, a, h.long))
	if msg := h.checkTTL(r, start, h.long); msg != "" {
		t.Fatalf("after Acquire(r, a, %v): %s", h.long, msg)
	}
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	free(r, "after Release(r, a)")

	r = h.res("expires")
	start = time.Now()
	h.must(fmt.Sprintf("Acquire(expires, a, %v)", h.ttl), h.store.Acquire(h.ctx(), r, h.tok("a"), h.ttl))
	set := time.Now()
	if msg := h.checkTTL(r, start, h.ttl); msg != "" {
		t.Fatalf("after Acquire(expires, a, %v): %s", h.ttl, msg)
	}
	// Halfway through the lock's life, at most what is left of it (which
	// may outlast its TTL by the granularity and the tolerance, as its
	// expiry may): the store set it by the time Acquire returned, and
	// reads it after the TTL call is sent.
	time.Sleep(h.ttl / 2)
	asked := time.Now()
	left, held, err := tr.TTL(h.ctx(), r)
	if hi := h.ttl + h.gran + h.opts.Tolerance - asked.Sub(set); err == nil && held && left > hi {
		t.Fatalf("TTL(expires) = %v, true, nil %v after Acquire(expires, a, %v) returned (granularity %v, tolerance %v); want at most %v: TTL is the time remaining, not the TTL set",
			left, asked.Sub(set).Round(time.Millisecond), h.ttl, h.gran, h.opts.Tolerance, hi.Round(time.Millisecond))
	}
	h.waitExpired(r, set, h.ttl)
	free(r, "once Exists(r) says the lock expired")
}

// verdict is a check's failure that is already a message of the form
// "Call(…) = got; want …", not an error to report as the call's.
type verdict string

func (v verdict) Error() string { return string(v) }
