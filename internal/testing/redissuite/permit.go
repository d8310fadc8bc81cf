package redissuite

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// testPermits runs the tests of the native permits (lock.Permitter,
// lock.PermitWaiter), each as a subtest.
func (f Factory) testPermits(t *testing.T) {
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"Basics", f.testPermitBasics},
		{"Cluster", f.testPermitCluster},
		{"LimitMismatch", f.testPermitLimitMismatch},
		{"ExpiryFrees", f.testPermitExpiryFrees},
		{"LeaveNothing", f.testPermitsLeaveNothing},
		{"FencesIncrease", f.testPermitFencesIncrease},
		{"Validation", f.testPermitValidation},
		{"WrongType", f.testPermitWrongType},
		{"AmbiguousOutcomes", f.testPermitAmbiguousOutcomes},
		{"AfterScriptFlush", f.testPermitAfterScriptFlush},
		{"RestartGuard", f.testPermitRestartGuard},
		{"WaitReplicas", f.testPermitWaitReplicas},
		{"WaitFreeReturnsAtOnce", f.testPermitWaitFree},
		{"WaitOnePerFreedPermit", f.testPermitWaitOnePerRelease},
		{"WaitAcrossProcesses", f.testPermitWaitAcrossProcesses},
		{"WaitWokenByExpiry", f.testPermitWaitExpiry},
		{"WaitSeesShorterExpiry", f.testPermitWaitSeesShorterExpiry},
		{"WaitOnCluster", f.testPermitWaitOnCluster},
	} {
		t.Run(tc.name, tc.test)
	}
}

// acquirePermits takes n permits of limit on r under tokens tok0, tok1...
// and returns their fences.
func acquirePermits(t *testing.T, ctx context.Context, s Store, r string, n, limit int, ttl time.Duration) []uint64 {
	t.Helper()
	fences := make([]uint64, n)
	for i := range n {
		fence, err := s.AcquirePermit(ctx, r, fmt.Sprintf("tok%d", i), limit, ttl)
		if err != nil {
			t.Fatalf("AcquirePermit(%s, tok%d, limit %d) = %v; want a permit (%d held)", r, i, limit, err, i)
		}
		fences[i] = fence
	}
	return fences
}

// keysLeft returns the keys of srv matching pattern.
func keysLeft(t *testing.T, srv *redistest.Server, pattern string) []string {
	t.Helper()
	keys, err := srv.Do("KEYS", pattern).AsStrSlice()
	if err != nil {
		t.Fatalf("KEYS %s = %v", pattern, err)
	}
	return keys
}

// testPermitBasics: limit permits and no more, each with a greater
// fence; release and extension by token only; a token holds one permit;
// permits and the lock of one name do not exclude each other.
func (f Factory) testPermitBasics(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("pb:"))
	ctx := ctxFor(t, 30*time.Second)
	const limit = 3
	fences := acquirePermits(t, ctx, s, "r", limit, limit, time.Minute)
	for i := 1; i < limit; i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fences of successive permits = %v; want strictly increasing", fences)
		}
	}
	if _, err := s.AcquirePermit(ctx, "r", "extra", limit, time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("AcquirePermit with %d of %d held = %v; want ErrNotAcquired", limit, limit, err)
	}
	if n, err := s.Permits(ctx, "r"); err != nil || n != limit {
		t.Fatalf("Permits(r) = %d, %v; want %d", n, err, limit)
	}
	if err := s.ReleasePermit(ctx, "r", "extra"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("ReleasePermit(r, wrongToken) = %v; want ErrNotHeld", err)
	}
	if err := s.ExtendPermit(ctx, "r", "extra", time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("ExtendPermit(r, wrongToken) = %v; want ErrNotHeld", err)
	}
	if err := s.ExtendPermit(ctx, "r", "tok1", 2*time.Minute); err != nil {
		t.Fatalf("ExtendPermit(r, tok1) = %v; want nil", err)
	}
	// The lock of r is another namespace.
	if err := s.Acquire(ctx, "r", "locker", time.Minute); err != nil {
		t.Fatalf("Acquire(r) while its permits are all held = %v; want nil: permits and locks do not exclude each other", err)
	}
	if err := s.ReleasePermit(ctx, "r", "tok0"); err != nil {
		t.Fatalf("ReleasePermit(r, tok0) = %v", err)
	}
	if err := s.ReleasePermit(ctx, "r", "tok0"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second ReleasePermit(r, tok0) = %v; want ErrNotHeld", err)
	}
	if _, err := s.AcquirePermit(ctx, "r", "tok1", limit, time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("AcquirePermit(r, tok1) while tok1 holds one = %v; want ErrNotAcquired (one permit per token)", err)
	}
	fence, err := s.AcquirePermit(ctx, "r", "extra", limit, time.Minute)
	if err != nil || fence <= fences[limit-1] {
		t.Fatalf("AcquirePermit after a release = %d, %v; want a fence above %d", fence, err, fences[limit-1])
	}
	if held, err := s.Exists(ctx, "r"); err != nil || !held {
		t.Fatalf("Exists(r) = %v, %v; want the lock untouched by permits", held, err)
	}
	for _, tok := range []string{"tok1", "tok2", "extra"} {
		if err := s.ReleasePermit(ctx, "r", tok); err != nil {
			t.Fatalf("ReleasePermit(r, %s) = %v", tok, err)
		}
	}
	if n, err := s.Permits(ctx, "r"); err != nil || n != 0 {
		t.Fatalf("Permits(r) after every release = %d, %v; want 0", n, err)
	}
	if keys := keysLeft(t, srv, "pb:*"); len(keys) != 1 || keys[0] != "pb:{r}" {
		t.Fatalf("keys after every permit was released = %q; want only the lock pb:{r}", keys)
	}
}

// testPermitCluster: on a cluster, permits live in the slot of their
// resource (names that need escaping included) and leave nothing.
func (f Factory) testPermitCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	s := f.Cluster(t, c, redisstore.WithPrefix("cperm:"))
	ctx := ctxFor(t, 30*time.Second)
	names := []string{"x", "{x}", "}a{", "{", "%7D"}
	last := map[string]uint64{}
	for _, r := range names {
		fences := acquirePermits(t, ctx, s, r, 2, 2, time.Minute)
		if fences[1] <= fences[0] {
			t.Fatalf("fences of %q = %v; want increasing", r, fences)
		}
		last[r] = fences[1]
		if _, err := s.AcquirePermit(ctx, r, "extra", 2, time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("AcquirePermit(%q) with 2 of 2 held = %v; want ErrNotAcquired (distinct names must not share permits)", r, err)
		}
	}
	key := redisstore.PermitsKey("cperm:", "}a{")
	master := c.MasterOf(t, redistest.Slot(key))
	if n, err := master.Do("ZCARD", key).AsInt64(); err != nil || n != 3 {
		t.Fatalf("ZCARD %s on its slot's master = %d, %v; want 2 permits and the limit", key, n, err)
	}
	for _, r := range names {
		for _, tok := range []string{"tok0", "tok1"} {
			if err := s.ReleasePermit(ctx, r, tok); err != nil {
				t.Fatalf("ReleasePermit(%q, %s) = %v", r, tok, err)
			}
		}
		fence, err := s.AcquirePermit(ctx, r, "again", 2, time.Minute)
		if err != nil || fence <= last[r] {
			t.Fatalf("AcquirePermit(%q) after releases = %d, %v; want a fence above %d", r, fence, err, last[r])
		}
		if err := s.ReleasePermit(ctx, r, "again"); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		if keys, err := n.Do("KEYS", "cperm:*").AsStrSlice(); err == nil && len(keys) > 0 {
			t.Fatalf("keys left on %s after every permit was released = %q", n.Addr(), keys)
		}
	}
}

// testPermitLimitMismatch: a caller asking with another limit than the
// permits held were taken under gets ErrLimitMismatch, not contention,
// and changes nothing; once no permit is held, a new limit is taken.
func (f Factory) testPermitLimitMismatch(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("lm:"))
	ctx := ctxFor(t, 30*time.Second)
	acquirePermits(t, ctx, s, "r", 2, 2, time.Minute)
	before, err := srv.Do("ZRANGE", "lm:{r}:permits", "0", "-1", "WITHSCORES").AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 3} {
		_, err := s.AcquirePermit(ctx, "r", "other", limit, time.Minute)
		if !errors.Is(err, lock.ErrLimitMismatch) || errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("AcquirePermit(r, limit %d) with permits taken under limit 2 = %v; want ErrLimitMismatch", limit, err)
		}
	}
	after, err := srv.Do("ZRANGE", "lm:{r}:permits", "0", "-1", "WITHSCORES").AsStrSlice()
	if err != nil || strings.Join(after, " ") != strings.Join(before, " ") {
		t.Fatalf("permits after the mismatched calls = %q, %v; want them unchanged: %q", after, err, before)
	}
	for _, tok := range []string{"tok0", "tok1"} {
		if err := s.ReleasePermit(ctx, "r", tok); err != nil {
			t.Fatal(err)
		}
	}
	acquirePermits(t, ctx, s, "r", 3, 3, time.Minute) // a new limit once none is held
	if _, err := s.AcquirePermit(ctx, "r", "other", 2, time.Minute); !errors.Is(err, lock.ErrLimitMismatch) {
		t.Fatalf("AcquirePermit(r, limit 2) with permits taken under limit 3 = %v; want ErrLimitMismatch", err)
	}
}

// testPermitExpiryFrees: an expired permit does not count, cannot be
// extended or released, and its slot goes to another caller.
func (f Factory) testPermitExpiryFrees(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("ex:"))
	ctx := ctxFor(t, 30*time.Second)
	if _, err := s.AcquirePermit(ctx, "r", "long", 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquirePermit(ctx, "r", "short", 2, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquirePermit(ctx, "r", "late", 2, time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("AcquirePermit with 2 of 2 held = %v; want ErrNotAcquired", err)
	}
	if err := s.WaitPermit(ctx, "r"); err != nil { // returns when "short" expires
		t.Fatalf("WaitPermit(r) = %v", err)
	}
	if n, err := s.Permits(ctx, "r"); err != nil || n != 1 {
		t.Fatalf("Permits(r) once WaitPermit returned = %d, %v; want 1: the expired permit does not count", n, err)
	}
	if err := s.ExtendPermit(ctx, "r", "short", time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("ExtendPermit of an expired permit = %v; want ErrNotHeld", err)
	}
	if _, err := s.AcquirePermit(ctx, "r", "late", 2, time.Minute); err != nil {
		t.Fatalf("AcquirePermit after a permit expired = %v; want a permit", err)
	}
	if err := s.ReleasePermit(ctx, "r", "short"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("ReleasePermit of an expired permit = %v; want ErrNotHeld", err)
	}
	if n, err := s.Permits(ctx, "r"); err != nil || n != 2 {
		t.Fatalf("Permits(r) = %d, %v; want 2: the expired permit was not re-created", n, err)
	}
	// The server keeps the permits held and the limit: the expired one
	// is gone.
	if n, err := srv.Do("ZCARD", redisstore.PermitsKey("ex:", "r")).AsInt64(); err != nil || n != 3 {
		t.Fatalf("ZCARD of the permits = %d, %v; want 3: two permits held and the limit", n, err)
	}
}

// testPermitsLeaveNothing: many fresh names, their permits released or
// left to expire, with waiters queued on some: only the fence counter is
// left once the permits are gone.
func (f Factory) testPermitsLeaveNothing(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("pfresh:"))
	ctx := ctxFor(t, 30*time.Second)
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := fmt.Sprintf("job/%d", i)
			ttl := time.Minute
			if i%2 == 1 {
				ttl = 300 * time.Millisecond // left to expire
			}
			for _, tok := range []string{"a", "b"} {
				if _, err := s.AcquirePermit(ctx, r, tok, 2, ttl); err != nil {
					t.Errorf("AcquirePermit(%s, %s) = %v", r, tok, err)
					return
				}
			}
			if i%10 == 1 { // a waiter queued until the permits expire
				if err := s.WaitPermit(ctx, r); err != nil {
					t.Errorf("WaitPermit(%s) = %v", r, err)
				}
			}
			if i%2 == 0 {
				for _, tok := range []string{"b", "a"} {
					if err := s.ReleasePermit(ctx, r, tok); err != nil {
						t.Errorf("ReleasePermit(%s, %s) = %v", r, tok, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	eventually(t, "no key left", func() bool { return len(keysLeft(t, srv, "pfresh:*")) == 0 })
	if keys := keysLeft(t, srv, "*"); len(keys) != 1 || keys[0] != redisstore.FenceKey {
		t.Errorf("keys after %d resources' permits were released or expired = %q; want only the fence counter %s", n, keys, redisstore.FenceKey)
	}
}

// testPermitFencesIncrease: fences of permits come from the counter of
// locks, and keep increasing when it is lost (a restart, a flush).
func (f Factory) testPermitFencesIncrease(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("pf:"))
	ctx := ctxFor(t, 30*time.Second)
	var last uint64
	next := func(what string, fence uint64) {
		t.Helper()
		if fence <= last {
			t.Fatalf("%s: fence %d; want above the previous %d", what, fence, last)
		}
		last = fence
	}
	for i := range 5 {
		fence, err := s.AcquirePermit(ctx, "r", "p", 2, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		next(fmt.Sprintf("permit %d", i), fence)
		lf, err := s.AcquireFenced(ctx, "r", "l", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		next(fmt.Sprintf("lock %d", i), lf)
		if err := s.ReleasePermit(ctx, "r", "p"); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, "r", "l"); err != nil {
			t.Fatal(err)
		}
	}
	// The counter lost, as in a restart: which takes longer than the
	// server's clock needs to pass the last fence (see docs/fencing.md).
	clockPasses(t, srv, last)
	if err := srv.Do("DEL", redisstore.FenceKey).Error(); err != nil {
		t.Fatal(err)
	}
	fence, err := s.AcquirePermit(ctx, "r", "p", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	next("permit after the counter was deleted", fence)
}

// testPermitValidation: bad input is refused with ErrInvalid before
// anything is sent.
func (f Factory) testPermitValidation(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("pv:"))
	ctx := ctxFor(t, 10*time.Second)
	long := strings.Repeat("x", redisstore.MaxResourceLen+1)
	for call, err := range map[string]error{
		"AcquirePermit(limit 0)":  func() error { _, err := s.AcquirePermit(ctx, "r", "t", 0, time.Second); return err }(),
		"AcquirePermit(limit -1)": func() error { _, err := s.AcquirePermit(ctx, "r", "t", -1, time.Second); return err }(),
		"AcquirePermit(ttl 0)":    func() error { _, err := s.AcquirePermit(ctx, "r", "t", 1, 0); return err }(),
		"AcquirePermit(token \"\")": func() error {
			_, err := s.AcquirePermit(ctx, "r", "", 1, time.Second)
			return err
		}(),
		"AcquirePermit(long name)":  func() error { _, err := s.AcquirePermit(ctx, long, "t", 1, time.Second); return err }(),
		"ReleasePermit(token \"\")": s.ReleasePermit(ctx, "r", ""),
		"ExtendPermit(ttl 0)":       s.ExtendPermit(ctx, "r", "t", 0),
		"Permits(\"\")":             func() error { _, err := s.Permits(ctx, ""); return err }(),
		"WaitPermit(\"\")":          s.WaitPermit(ctx, ""),
	} {
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s = %v; want ErrInvalid", call, err)
		}
	}
	if keys := keysLeft(t, srv, "*"); len(keys) != 0 {
		t.Errorf("keys after refused calls = %q; want none", keys)
	}
}

// testPermitWrongType: a permits key holding a value no permit script
// wrote is an error of the store on every call, never contention, and
// stays untouched.
func (f Factory) testPermitWrongType(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("pwt:"))
	ctx := ctxFor(t, 10*time.Second)
	key := redisstore.PermitsKey("pwt:", "r")
	for _, write := range [][]string{{"LPUSH", key, "x"}, {"ZADD", key, "9e15", "foreign"}} {
		if err := srv.Do(write...).Error(); err != nil {
			t.Fatal(err)
		}
		for call, err := range map[string]error{
			"AcquirePermit": func() error { _, err := s.AcquirePermit(ctx, "r", "t", 1, time.Minute); return err }(),
			"ReleasePermit": s.ReleasePermit(ctx, "r", "t"),
			"ExtendPermit":  s.ExtendPermit(ctx, "r", "t", time.Minute),
			"Permits":       func() error { _, err := s.Permits(ctx, "r"); return err }(),
		} {
			if write[0] == "ZADD" && call != "AcquirePermit" {
				continue // a sorted set: the others read it as permits
			}
			if err == nil || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Errorf("%s on a %s = %v; want a WRONGTYPE error, not a lock outcome", call, write[0], err)
			}
		}
		if write[0] == "LPUSH" {
			if err := s.WaitPermit(ctx, "r"); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Errorf("WaitPermit on a list = %v; want a WRONGTYPE error", err)
			}
			if typ, err := srv.Do("TYPE", key).ToString(); err != nil || typ != "list" {
				t.Errorf("TYPE after the calls = %q, %v; want the list untouched", typ, err)
			}
		}
		if err := srv.Do("DEL", key).Error(); err != nil {
			t.Fatal(err)
		}
	}
}

// testPermitAmbiguousOutcomes: calls whose answer does not come (a
// paused server) or cannot (a dead one) are errors, never ErrNotAcquired
// or ErrNotHeld.
func (f Factory) testPermitAmbiguousOutcomes(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, 30*time.Second)
	if _, err := s.AcquirePermit(ctx, "full", "holder", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	short := func() context.Context { return ctxFor(t, 100*time.Millisecond) }
	calls := map[string]error{
		"AcquirePermit(full)": func() error { _, err := s.AcquirePermit(short(), "full", "a", 1, time.Minute); return err }(),
		"AcquirePermit(free)": func() error { _, err := s.AcquirePermit(short(), "free", "a", 1, time.Minute); return err }(),
		"ReleasePermit(full)": s.ReleasePermit(short(), "full", "other"),
		"ExtendPermit(full)":  s.ExtendPermit(short(), "full", "other", time.Minute),
		"Permits(full)":       func() error { _, err := s.Permits(short(), "full"); return err }(),
		"WaitPermit(full)":    s.WaitPermit(short(), "full"),
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	for call, err := range calls {
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("%s on a paused server = %v; want context.DeadlineExceeded, no lock outcome", call, err)
		}
	}
	if err := s.ReleasePermit(ctx, "free", "a"); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("ReleasePermit(free, a) after resume = %v", err)
	}
	if err := s.ReleasePermit(ctx, "full", "holder"); err != nil {
		t.Fatalf("ReleasePermit(full, holder) after resume = %v; the paused calls changed the permits", err)
	}
	srv.Kill()
	for call, err := range map[string]error{
		"AcquirePermit": func() error { _, err := s.AcquirePermit(ctx, "r", "a", 1, time.Minute); return err }(),
		"ReleasePermit": s.ReleasePermit(ctx, "r", "a"),
		"ExtendPermit":  s.ExtendPermit(ctx, "r", "a", time.Minute),
		"Permits":       func() error { _, err := s.Permits(ctx, "r"); return err }(),
		"WaitPermit":    s.WaitPermit(ctx, "r"),
	} {
		if err == nil || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s on a dead server = %v; want a connection error", call, err)
		}
	}
}

// testPermitAfterScriptFlush: every permit script is sent again in full
// when the server has forgotten it.
func (f Factory) testPermitAfterScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	for _, s := range []Store{f.Server(t, srv), f.Server(t, srv, redisstore.WithWaitReplicas(1, 10*time.Millisecond))} {
		flush := func() {
			t.Helper()
			if err := srv.Do("SCRIPT", "FLUSH").Error(); err != nil {
				t.Fatal(err)
			}
		}
		flush()
		_, err := s.AcquirePermit(ctx, "r", "t", 1, time.Minute)
		if errors.Is(err, redisstore.ErrNotReplicated) {
			continue // no replica: what counts is that the script ran
		}
		if err != nil {
			t.Fatalf("AcquirePermit after SCRIPT FLUSH = %v", err)
		}
		flush()
		if err := s.ExtendPermit(ctx, "r", "t", time.Minute); err != nil {
			t.Fatalf("ExtendPermit after SCRIPT FLUSH = %v", err)
		}
		flush()
		if n, err := s.Permits(ctx, "r"); err != nil || n != 1 {
			t.Fatalf("Permits after SCRIPT FLUSH = %d, %v; want 1", n, err)
		}
		flush()
		if err := s.WaitPermit(ctx, "other"); err != nil {
			t.Fatalf("WaitPermit after SCRIPT FLUSH = %v", err)
		}
		flush()
		if err := s.ReleasePermit(ctx, "r", "t"); err != nil {
			t.Fatalf("ReleasePermit after SCRIPT FLUSH = %v", err)
		}
	}
}

// testPermitRestartGuard: behind the restart guard, a server that lost
// its data grants no permit until maxTTL has passed.
func (f Factory) testPermitRestartGuard(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithRestartGuard(300*time.Millisecond))
	ctx := ctxFor(t, 30*time.Second)
	_, err := s.AcquirePermit(ctx, "r", "t", 2, 100*time.Millisecond)
	if !errors.Is(err, redisstore.ErrRecovering) || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("AcquirePermit on a server the guard has not seen = %v; want ErrRecovering", err)
	}
	if _, err := s.AcquirePermit(ctx, "r", "t", 2, time.Minute); !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("AcquirePermit with a TTL above the guard's maximum = %v; want ErrInvalid", err)
	}
	eventually(t, "the guard lets permits through", func() bool {
		_, err := s.AcquirePermit(ctx, "r", "t", 2, 100*time.Millisecond)
		return err == nil
	})
}

// testPermitWaitReplicas: with WithWaitReplicas and no replica, the
// permit is taken, not confirmed, and given back: ErrNotReplicated, and
// nothing held.
func (f Factory) testPermitWaitReplicas(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("pwr:"), redisstore.WithWaitReplicas(1, 10*time.Millisecond))
	ctx := ctxFor(t, 30*time.Second)
	_, err := s.AcquirePermit(ctx, "r", "t", 1, time.Minute)
	if !errors.Is(err, redisstore.ErrNotReplicated) || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("AcquirePermit with a replica asked for and none there = %v; want ErrNotReplicated", err)
	}
	if n, err := s.Permits(ctx, "r"); err != nil || n != 0 {
		t.Fatalf("Permits after an unreplicated permit = %d, %v; want 0: it is given back", n, err)
	}
	if keys := keysLeft(t, srv, "pwr:*"); len(keys) != 0 {
		t.Fatalf("keys after an unreplicated permit = %q; want none", keys)
	}
}

// testPermitWaitFree: WaitPermit returns at once when a permit is free —
// on a resource nobody touched, and with fewer than limit held.
func (f Factory) testPermitWaitFree(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("pwf:"))
	ctx := ctxFor(t, 10*time.Second)
	if err := s.WaitPermit(ctx, "r"); err != nil {
		t.Fatalf("WaitPermit on a resource without permits = %v", err)
	}
	acquirePermits(t, ctx, s, "r", 2, 3, time.Minute)
	if err := s.WaitPermit(ctx, "r"); err != nil {
		t.Fatalf("WaitPermit with 2 of 3 permits held = %v", err)
	}
	if n, err := srv.Do("EXISTS", redisstore.PermitsKey("pwf:", "r")+redisstore.WaitersSuffix).AsInt64(); err != nil || n != 0 {
		t.Fatalf("EXISTS of the permits' waiters' queue = %d, %v; want 0: nobody waited", n, err)
	}
	noSubscriptionsLeft(t, srv, redisstore.PermitsKey("pwf:", "r"))
}

// waitFor starts WaitPermit(ctx, r) on s and returns its outcome.
func waitFor(ctx context.Context, s Store, r string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.WaitPermit(ctx, r) }()
	return done
}

// waitersInLine waits until the waiters' queue of the lock or the
// permits at key holds n entries.
func waitersInLine(t *testing.T, srv *redistest.Server, key string, n int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d in line", n), func() bool {
		got, err := srv.Do("LLEN", key+redisstore.WaitersSuffix).AsInt64()
		return err == nil && got == n
	})
}

// nextWoken waits for the next of waits to return, marks it returned and
// returns its index, failing t on an error or if ctx ends first.
func nextWoken(t *testing.T, ctx context.Context, waits []<-chan error, returned []bool) int {
	t.Helper()
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}}
	index := []int{-1}
	for i, w := range waits {
		if !returned[i] {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w)})
			index = append(index, i)
		}
	}
	chosen, v, _ := reflect.Select(cases)
	if chosen == 0 {
		t.Fatal("no waiter woken before the test's deadline")
	}
	i := index[chosen]
	if err, _ := v.Interface().(error); err != nil {
		t.Fatalf("WaitPermit %d = %v", i, err)
	}
	returned[i] = true
	return i
}

// countWoken returns how many of waits have returned, failing t on an
// error, after a moment for more to return (a wake too many shows up
// there; none too few can be missed, as the count is checked again).
func countWoken(t *testing.T, waits []<-chan error, returned []bool) int {
	t.Helper()
	time.Sleep(100 * time.Millisecond)
	n := 0
	for i, w := range waits {
		if returned[i] {
			n++
			continue
		}
		select {
		case err := <-w:
			if err != nil {
				t.Fatalf("WaitPermit %d = %v", i, err)
			}
			returned[i] = true
			n++
		default:
		}
	}
	return n
}

// testPermitWaitOnePerRelease: with every permit held, each release
// wakes exactly one waiter, in the order they got in line.
func (f Factory) testPermitWaitOnePerRelease(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("pw:"))
	ctx := ctxFor(t, 30*time.Second)
	const limit, waiters = 2, 4
	acquirePermits(t, ctx, s, "r", limit, limit, time.Minute)
	key := redisstore.PermitsKey("pw:", "r")
	waits := make([]<-chan error, waiters)
	for i := range waiters {
		waits[i] = waitFor(ctx, s, "r")
	}
	// One subscription for the process, in line once per caller.
	eventually(t, "in line", func() bool {
		n, err := srv.Do("LLEN", key+redisstore.WaitersSuffix).AsInt64()
		return err == nil && n == waiters && shardSubscribers(t, srv, key) == 1
	})
	returned := make([]bool, waiters)
	woken := 0
	for i := range limit {
		if err := s.ReleasePermit(ctx, "r", fmt.Sprintf("tok%d", i)); err != nil {
			t.Fatal(err)
		}
		nextWoken(t, ctx, waits, returned)
		woken++
		// The woken caller takes the freed permit at once, as a woken
		// waiter does (one that looks again meanwhile lets it: see
		// permit_wait.lua's handoff); the others wait on.
		if _, err := s.AcquirePermit(ctx, "r", fmt.Sprintf("woken%d", i), limit, time.Minute); err != nil {
			t.Fatalf("AcquirePermit by the woken waiter = %v", err)
		}
		if n := countWoken(t, waits, returned); n != woken {
			t.Fatalf("release %d woke %d waiters; want 1", i, n-woken+1)
		}
	}
	if err := s.ReleasePermit(ctx, "r", "woken0"); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleasePermit(ctx, "r", "woken1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every waiter woken", func() bool { return countWoken(t, waits, returned) == waiters })
	noSubscriptionsLeft(t, srv, key)
}

// testPermitWaitAcrossProcesses: waiters of two processes (two clients)
// for one resource: each release wakes one of them, first in line first.
func (f Factory) testPermitWaitAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	a := f.Server(t, srv, redisstore.WithPrefix("pwx:"))
	b := f.Server(t, srv, redisstore.WithPrefix("pwx:"))
	ctx := ctxFor(t, 30*time.Second)
	key := redisstore.PermitsKey("pwx:", "r")
	acquirePermits(t, ctx, a, "r", 2, 2, time.Minute)
	waits := []<-chan error{waitFor(ctx, a, "r")}
	waitersInLine(t, srv, key, 1)
	waits = append(waits, waitFor(ctx, b, "r"))
	waitersInLine(t, srv, key, 2)
	returned := make([]bool, 2)
	if err := a.ReleasePermit(ctx, "r", "tok0"); err != nil {
		t.Fatal(err)
	}
	if i := nextWoken(t, ctx, waits, returned); i != 0 {
		t.Fatalf("the release woke waiter %d; want the first in line (process a)", i)
	}
	// The first takes the freed permit, as a woken waiter does (a waiter
	// that looks again meanwhile lets it: see permit_wait.lua's handoff).
	if _, err := a.AcquirePermit(ctx, "r", "tok2", 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	if countWoken(t, waits, returned); returned[1] {
		t.Fatalf("woken after one release: %v; want the first in line (process a) only", returned)
	}
	if err := a.ReleasePermit(ctx, "r", "tok1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "second woken", func() bool { return countWoken(t, waits, returned) == 2 })
}

// testPermitWaitExpiry: a waiter is woken when a permit expires, without
// a release; and a waiter that got in line before the permit was extended
// looks again when the first TTL runs out, and waits on.
func (f Factory) testPermitWaitExpiry(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("pwe:"))
	ctx := ctxFor(t, 30*time.Second)
	if _, err := s.AcquirePermit(ctx, "r", "long", 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquirePermit(ctx, "r", "short", 2, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	done := waitFor(ctx, s, "r")
	waitersInLine(t, srv, redisstore.PermitsKey("pwe:", "r"), 1)
	if err := s.ExtendPermit(ctx, "r", "short", 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitPermit = %v", err)
	}
	if n, err := s.Permits(ctx, "r"); err != nil || n != 1 {
		t.Fatalf("Permits when WaitPermit returned = %d, %v; want 1: it returned while the extended permit was held", n, err)
	}
}

// testPermitWaitSeesShorterExpiry: a permit shortened while waited for
// (extended for less than the TTL the waiter saw) and left to expire frees
// the waiter soon after it expires, not at the TTL it saw.
func (f Factory) testPermitWaitSeesShorterExpiry(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("pws:"))
	ctx := ctxFor(t, 30*time.Second)
	if _, err := s.AcquirePermit(ctx, "r", "holder", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	done := waitFor(wctx, s, "r")
	waitersInLine(t, srv, redisstore.PermitsKey("pws:", "r"), 1)
	if err := s.ExtendPermit(ctx, "r", "holder", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// The holder vanishes: its permit expires unreleased, an hour before
	// the TTL the waiter saw.
	if err := <-done; err != nil {
		t.Fatalf("WaitPermit for a permit shortened to 300ms and left to expire = %v; want nil soon after it expired (within the 20s the wait was given)", err)
	}
}

// testPermitWaitOnCluster: on a cluster, a waiter subscribes on the node
// of the resource's slot, is woken by a release, and leaves nothing.
func (f Factory) testPermitWaitOnCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	s := f.Cluster(t, c, redisstore.WithPrefix("cpw:"))
	ctx := ctxFor(t, 30*time.Second)
	if _, err := s.AcquirePermit(ctx, "}r{", "holder", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	key := redisstore.PermitsKey("cpw:", "}r{")
	master := c.MasterOf(t, redistest.Slot(key))
	done := waitFor(ctx, s, "}r{")
	eventually(t, "subscribed on the slot's master", func() bool { return shardSubscribers(t, master, key) == 1 })
	if err := s.ReleasePermit(ctx, "}r{", "holder"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitPermit = %v", err)
	}
	noSubscriptionsLeft(t, master, key)
	if keys, err := master.Do("KEYS", "cpw:*").AsStrSlice(); err != nil || len(keys) != 0 {
		t.Fatalf("keys left on the slot's master = %q, %v; want none", keys, err)
	}
}
