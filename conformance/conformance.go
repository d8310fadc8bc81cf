package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
)

// Options tunes the suite to a store. A nil *Options gives the defaults.
type Options struct {
	// TTL is the lock TTL used by rules that wait for a lock to expire.
	// Default: 200ms plus the granularity.
	TTL time.Duration

	// Granularity is the amount by which the store may expire a lock
	// early (see lock.Granular). Default: what the store reports, or zero.
	Granularity time.Duration

	// Tolerance is the slack allowed to timing checks on top of the TTL
	// and granularity, for the latency of a real server. Default: 100ms,
	// or 1ms with Synctest.
	Tolerance time.Duration

	// Synctest runs each rule inside a testing/synctest bubble, on a fake
	// clock, so that rules waiting for expiry take no real time. Only for
	// stores whose goroutines and timers all live in the test process and
	// that create them inside the bubble (the factory is called there);
	// never for a store that talks to a server.
	Synctest bool

	// Contenders and Rounds size the contention rules. Defaults: 8 and 20.
	Contenders, Rounds int
}

// TestStore runs the conformance suite: one subtest per rule, each on a
// fresh store from newStore. newStore must return a store that shares no
// locks with the stores it returned before (use a fresh key prefix on a
// shared server); it may call t.Skip, and register cleanups with t.Cleanup.
func TestStore(t *testing.T, newStore func(t *testing.T) lock.Store, opts *Options) {
	t.Helper()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Tolerance == 0 {
		o.Tolerance = 100 * time.Millisecond
		if o.Synctest {
			o.Tolerance = time.Millisecond
		}
	}
	if o.Contenders == 0 {
		o.Contenders = 8
	}
	if o.Rounds == 0 {
		o.Rounds = 20
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			body := func(t *testing.T) {
				h := newHarness(t, newStore, o)
				if r.needs != nil {
					if missing := r.needs(h.store); missing != "" {
						t.Skipf("store does not implement %s", missing)
					}
				}
				r.run(t, h)
			}
			if o.Synctest {
				synctest.Test(t, body)
			} else {
				body(t)
			}
		})
	}
}

// harness is what a rule works with: the store, timing, names and tokens.
type harness struct {
	t        *testing.T
	store    lock.Store
	newStore func(t *testing.T) lock.Store
	opts     Options
	gran     time.Duration // granularity
	ttl      time.Duration // short TTL, for rules that wait for expiry
	long     time.Duration // TTL of locks that must outlive the rule
	prefix   string
	n        int
}

func newHarness(t *testing.T, newStore func(t *testing.T) lock.Store, o Options) *harness {
	s := newStore(t)
	if s == nil {
		t.Fatal("newStore returned nil")
	}
	h := &harness{t: t, store: s, newStore: newStore, opts: o, gran: o.Granularity}
	if g, ok := s.(lock.Granular); ok && h.gran == 0 {
		h.gran = g.TTLGranularity()
	}
	h.ttl = o.TTL
	if h.ttl == 0 {
		h.ttl = 200*time.Millisecond + h.gran
	}
	h.long = 30*time.Second + h.gran
	var b [4]byte
	_, _ = rand.Read(b[:])
	h.prefix = "conformance-" + hex.EncodeToString(b[:]) + "/"
	return h
}

// res returns a resource name unique to this rule.
func (h *harness) res(name string) string { return h.prefix + name }

// tok returns a fresh token.
func (h *harness) tok(owner string) string {
	h.n++
	return fmt.Sprintf("%s-%s%d", owner, h.prefix, h.n)
}

// ctx returns a context for one call: the test's, bounded so that a store
// that hangs fails the rule instead of the whole test binary.
func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(h.t.Context(), 30*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// expiryBound is how long after acquisition a lock of ttl must be gone.
func (h *harness) expiryBound(ttl time.Duration) time.Duration {
	return ttl + 2*h.gran + h.opts.Tolerance
}

// settle gives goroutines started by the rule time to reach the state they
// block in, before a negative check ("has not returned").
func (h *harness) settle() {
	if h.opts.Synctest {
		synctest.Wait()
		return
	}
	time.Sleep(50 * time.Millisecond)
}

// eventually polls cond until it holds or within has passed since start.
func (h *harness) eventually(start time.Time, within time.Duration, cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		if time.Since(start) > within {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// exists calls Exists and fails the rule on error.
func (h *harness) exists(resource string) bool {
	h.t.Helper()
	ok, err := h.store.Exists(h.ctx(), resource)
	if err != nil {
		h.t.Fatalf("Exists(%s) error = %v", h.name(resource), err)
	}
	return ok
}

// waitExpired waits for a lock acquired at start with ttl to expire, and
// fails the rule if it outlives its TTL.
func (h *harness) waitExpired(resource string, start time.Time, ttl time.Duration) {
	h.t.Helper()
	if !h.eventually(start, h.expiryBound(ttl), func() bool { return !h.exists(resource) }) {
		h.t.Fatalf("Exists(%s) = true %v after Acquire with ttl %v; want false: the lock did not expire",
			h.name(resource), time.Since(start).Round(time.Millisecond), ttl)
	}
}

// name renders a resource in messages: the rule's own resources by their
// short name.
func (h *harness) name(resource string) string {
	if len(resource) > len(h.prefix) && resource[:len(h.prefix)] == h.prefix {
		return resource[len(h.prefix):]
	}
	if len(resource) > 40 {
		return fmt.Sprintf("%.20q…(%d bytes)", resource, len(resource))
	}
	return fmt.Sprintf("%q", resource)
}

// must fails the rule if err is not nil.
func (h *harness) must(call string, err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatalf("%s = %v; want nil", call, err)
	}
}

// want fails the rule unless errors.Is(err, target).
func (h *harness) want(call string, err, target error) {
	h.t.Helper()
	if !errors.Is(err, target) {
		h.t.Fatalf("%s = %v; want %s", call, errString(err), sentinelName(target))
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

func sentinelName(err error) string {
	switch err {
	case lock.ErrNotAcquired:
		return "ErrNotAcquired"
	case lock.ErrNotHeld:
		return "ErrNotHeld"
	case context.Canceled:
		return "context.Canceled"
	case context.DeadlineExceeded:
		return "context.DeadlineExceeded"
	}
	return err.Error()
}
