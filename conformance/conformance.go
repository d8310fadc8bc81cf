package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
)

// Options tunes the suite to a store. A nil *Options, or a zero field,
// gives the defaults; a negative field fails the test before any rule runs.
type Options struct {
	// TTL is the lock TTL used by rules that wait for a lock to expire.
	// Default: 200ms plus the granularity; one no longer than the
	// granularity fails every rule.
	TTL time.Duration

	// Granularity is the amount by which the store may expire a lock
	// early (see lock.Granular). Default: what the store reports, or zero.
	Granularity time.Duration

	// Tolerance is the slack allowed to timing checks on top of the TTL
	// and granularity, for the latency of a real server. (Checks that a
	// lock lives its TTL need none: they judge by when answers came.)
	// Default: 100ms, or 1ms with Synctest.
	Tolerance time.Duration

	// Synctest runs each rule inside a testing/synctest bubble, on a fake
	// clock, so that rules waiting for expiry take no real time. Only for
	// stores whose goroutines and timers all live in the test process and
	// that create them inside the bubble (the factory is called there);
	// never for a store that talks to a server.
	Synctest bool

	// Contenders and Rounds size the contention rules. Defaults: 8 and 20.
	Contenders, Rounds int

	// Restart, if set, restarts the server behind the stores that
	// newStore returns, as a crash and restart would (persistence as the
	// server is configured), and returns once those stores can reach it
	// again. The rules on fences across a restart run only with it. It
	// may call t.Fatal.
	Restart func(t *testing.T)
}

// TestStore runs the conformance suite: one subtest per rule, each on a
// fresh store from newStore. newStore must return a store that shares no
// locks with the stores it returned before (use a fresh key prefix on a
// shared server); it may call t.Skip, and register cleanups with t.Cleanup.
//
// A rule that fails says which call broke it and what was expected, then
// why the rule matters and where it is written.
func TestStore(t *testing.T, newStore func(t *testing.T) lock.Store, opts *Options) {
	t.Helper()
	o := checkOptions(t, opts)
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
			defer explain(t, r)
			var skip string
			body := func(t *testing.T) {
				h := newHarness(t, newStore, o)
				if r.needs != nil {
					if skip = r.needs(h); skip != "" {
						return // skipped outside the bubble: t.Skip inside one reports a pass
					}
				}
				defer h.close()
				r.run(t, h)
			}
			if o.Synctest {
				if inBubble(t, body) {
					t.SkipNow() // the factory skipped
				}
			} else {
				body(t)
			}
			if skip != "" {
				t.Skip(skip)
			}
		})
	}
}

// inBubble runs body in a synctest bubble and reports whether it skipped.
// A rule that leaves goroutines blocked in the bubble (a store that leaks
// one, or a call that never returns) fails, instead of aborting the test
// binary with synctest's deadlock panic and losing every later rule.
func inBubble(t *testing.T, body func(*testing.T)) (skipped bool) {
	t.Helper()
	defer func() {
		if v := recover(); v != nil {
			if err, ok := v.(error); ok && strings.HasPrefix(err.Error(), "deadlock") {
				t.Fatalf("the rule ended with goroutines blocked for good (synctest: %v): a store call never returned, or the store leaks a goroutine that waits on nothing", err)
			}
			panic(v)
		}
	}()
	var inner *testing.T
	synctest.Test(t, func(t *testing.T) {
		inner = t
		body(t)
	})
	return inner.Skipped()
}

// explain tells, after a rule failed, why the rule matters and where it
// is written.
func explain(t *testing.T, r rule) {
	if !t.Failed() {
		return
	}
	fn := runtime.FuncForPC(reflect.ValueOf(r.run).Pointer())
	file, line := fn.FileLine(fn.Entry())
	t.Logf("rule %s (%s:%d): %s", r.name, filepath.Join(filepath.Base(filepath.Dir(file)), filepath.Base(file)), line, r.why)
}

// checkOptions returns *opts (nil: the zero Options), and fails the test
// if a field is negative: TestStore must not read such a value as a
// default, run no contention rounds, or panic.
func checkOptions(t *testing.T, opts *Options) Options {
	t.Helper()
	if opts == nil {
		return Options{}
	}
	for _, f := range []struct {
		name     string
		negative bool
		value    any
	}{
		{"TTL", opts.TTL < 0, opts.TTL},
		{"Granularity", opts.Granularity < 0, opts.Granularity},
		{"Tolerance", opts.Tolerance < 0, opts.Tolerance},
		{"Contenders", opts.Contenders < 0, opts.Contenders},
		{"Rounds", opts.Rounds < 0, opts.Rounds},
	} {
		if f.negative {
			t.Fatalf("conformance: Options.%s = %v; want 0 (the default) or more", f.name, f.value)
		}
	}
	return *opts
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
	cancel   context.CancelFunc // ends every context of the rule's calls
	base     context.Context

	mu   sync.Mutex
	left []leftLock // released when the rule ends
}

// leftLock is a lock, or a permit, that a rule leaves held.
type leftLock struct {
	resource, token string
	permit          bool
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
	if h.ttl <= h.gran {
		t.Fatalf("conformance: Options.TTL = %v, no longer than the granularity (%v); want more: a lock of that TTL may expire at once", h.ttl, h.gran)
	}
	h.long = 30*time.Second + h.gran
	var b [4]byte
	_, _ = rand.Read(b[:])
	h.prefix = "conformance-" + hex.EncodeToString(b[:]) + "/"
	h.base, h.cancel = context.WithCancel(t.Context())
	return h
}

// close ends the rule: it releases what the rule left held, so that the
// suite leaves the store as it found it, and cancels the contexts of its
// calls, so that calls still blocked (a WaitRelease, a Lock) return.
func (h *harness) close() {
	defer h.cancel()
	h.mu.Lock()
	left := h.left
	h.left = nil
	h.mu.Unlock()
	for i := len(left) - 1; i >= 0; i-- {
		l := left[i]
		call, err := "Release", error(nil)
		if l.permit {
			call, err = "ReleasePermit", h.permits().ReleasePermit(h.ctx(), l.resource, l.token)
		} else {
			err = h.store.Release(h.ctx(), l.resource, l.token)
		}
		// The lock may have expired, or been released by the rule: only
		// a failure says something, unless the rule failed already.
		if err != nil && !errors.Is(err, lock.ErrNotHeld) && !h.t.Failed() {
			h.t.Errorf("%s(%s, %s) as the rule ends, to leave nothing held = %v; want nil or ErrNotHeld", call, h.name(l.resource), l.token, err)
		}
	}
}

// releasing has the rule release, when it ends, the lock on resource
// under token, which the call that returned err may have taken; it
// returns err. A rule leaves no lock held for longer than it runs.
func (h *harness) releasing(resource, token string, err error) error {
	h.mu.Lock()
	h.left = append(h.left, leftLock{resource: resource, token: token})
	h.mu.Unlock()
	return err
}

// releasingPermit is releasing for a permit.
func (h *harness) releasingPermit(resource, token string, err error) error {
	h.mu.Lock()
	h.left = append(h.left, leftLock{resource: resource, token: token, permit: true})
	h.mu.Unlock()
	return err
}

// res returns a resource name unique to this rule.
func (h *harness) res(name string) string { return h.prefix + name }

// tok returns a fresh token.
func (h *harness) tok(owner string) string {
	h.n++
	return fmt.Sprintf("%s-%s%d", owner, h.prefix, h.n)
}

// callTimeout bounds every call of a rule, so that a store that hangs
// fails the rule instead of the whole test binary.
const callTimeout = 30 * time.Second

// ctx returns a context for one call: the rule's, bounded by callTimeout.
func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(h.base, callTimeout)
	h.t.Cleanup(cancel)
	return ctx
}

// expiryBound is how long after the call that set it a lock of ttl must
// be gone.
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

// exists calls Exists and fails the rule on error.
func (h *harness) exists(resource string) bool {
	h.t.Helper()
	ok, err := h.store.Exists(h.ctx(), resource)
	if err != nil {
		h.t.Fatalf("Exists(%s) = %v; want nil", h.name(resource), err)
	}
	return ok
}

// expires polls Exists until resource, set with ttl by a call that
// returned at set, is gone. It reports false, with how long after set,
// if it was still there for a poll sent after the expiry bound. Judging
// by when the poll was sent, not when it was answered, keeps a slow
// machine from failing a correct store.
func (h *harness) expires(resource string, set time.Time, ttl time.Duration) (bool, time.Duration) {
	h.t.Helper()
	for {
		sent := time.Since(set)
		if !h.exists(resource) {
			return true, 0
		}
		if sent > h.expiryBound(ttl) {
			return false, sent
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitExpired waits for a lock of ttl, set by a call that returned at set,
// to expire, and fails the rule if it outlives its TTL.
func (h *harness) waitExpired(resource string, set time.Time, ttl time.Duration) {
	h.t.Helper()
	if ok, after := h.expires(resource, set, ttl); !ok {
		h.t.Fatalf("Exists(%s) = true %v after it was set with ttl %v; want false: the lock did not expire",
			h.name(resource), after.Round(time.Millisecond), ttl)
	}
}

// lasts polls Exists on resource, set with ttl by a call sent at start,
// until the least the lock must live (its TTL less the granularity), and
// reports whether it lasted, with the time of the last answer.
func (h *harness) lasts(resource string, start time.Time, ttl time.Duration) (bool, time.Duration, error) {
	return h.lives(start, ttl, func() (bool, error) { return h.store.Exists(h.ctx(), resource) })
}

// lives polls held, which says whether a lock (or a permit) set with ttl
// by a call sent at start is still there, until the least it must live,
// its TTL less the granularity, and reports whether it lived, with the
// time of the last answer. It reports false only for an answer that
// arrived before then, however late the poll was sent: a store applies
// the call after start and reads the lock before it answers, so an answer
// that says gone before then is early expiry, while one that arrives
// later is too late to tell, and a slow machine never fails a correct
// store. Polling, not one check at the end, catches a lock that goes
// early however late the checks run.
func (h *harness) lives(start time.Time, ttl time.Duration, held func() (bool, error)) (bool, time.Duration, error) {
	end := start.Add(ttl - h.gran)
	for {
		ok, err := held()
		after := time.Since(start)
		switch {
		case err != nil:
			return false, after, err
		case !ok:
			return !time.Now().Before(end), after, nil // gone after its TTL could have run out: too late to tell
		case !time.Now().Before(end):
			return true, after, nil
		}
		time.Sleep(min(max(ttl/50, 5*time.Millisecond), time.Until(end)))
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
	case lock.ErrInvalid:
		return "an error matching lock.ErrInvalid"
	case context.Canceled:
		return "context.Canceled"
	case context.DeadlineExceeded:
		return "context.DeadlineExceeded"
	case errors.ErrUnsupported:
		return "errors.ErrUnsupported"
	}
	return err.Error()
}
