package memcache_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// TTLs over 30 days are sent as absolute times: the lock is there right
// after Acquire and Extend, with the TTL asked for. Sent as relative
// seconds, memcached would read them as a time in 1970 and drop the item
// at once, as the raw add below shows.
// With WithServer, the store's own add (a meta set) does the same.
func TestLongTTL(t *testing.T) {
	t.Parallel()
	eachWay(t, testLongTTL)
}

func testLongTTL(t *testing.T, withServer bool) {
	srv := memcachetest.Start(t, nil)
	client := srv.Client(t)
	s, _ := fenceStore(t, srv, client, withServer)
	const day = 24 * time.Hour

	if err := client.Add(&gomemcache.Item{Key: "raw", Value: []byte("x"), Expiration: int32((31 * day).Seconds())}); err != nil {
		t.Fatalf("raw add = %v", err)
	}
	if _, found := item(t, srv, "raw"); found {
		t.Fatal("an item added with a relative expiration of 31 days is there; memcached should have read it as a time in 1970")
	}

	check := func(what string, ttl time.Duration) {
		t.Helper()
		it, found := item(t, srv, "p:r")
		// A few seconds of slack for the clocks of client and server.
		if lo, hi := int64((ttl - 5*time.Second).Seconds()), int64((ttl + 5*time.Second).Seconds()); !found || it.TTL < lo || it.TTL > hi {
			t.Fatalf("after %s: item = %+v, found %v; want the token with a TTL in [%d, %d]s", what, it, found, lo, hi)
		}
	}
	if err := s.Acquire(ctx(t), "r", "a", 31*day); err != nil {
		t.Fatalf("Acquire(r, a, 31 days) = %v", err)
	}
	check("Acquire(r, a, 31 days)", 31*day)
	if err := s.Extend(ctx(t), "r", "a", 40*day); err != nil {
		t.Fatalf("Extend(r, a, 40 days) = %v", err)
	}
	check("Extend(r, a, 40 days)", 40*day)
	if err := s.Extend(ctx(t), "r", "a", 30*day); err != nil {
		t.Fatalf("Extend(r, a, 30 days) = %v", err)
	}
	check("Extend(r, a, 30 days)", 30*day) // the largest relative value
	if err := s.Release(ctx(t), "r", "a"); err != nil {
		t.Fatalf("Release(r, a) = %v", err)
	}
}

// TTLs are rounded up to whole seconds: 2.5s is sent as 3s. The server
// reports the remaining whole seconds, one less if its clock ticked
// between the add and the read, so the read is repeated until it shows
// the TTL sent; rounded down, it could never show 3.
func TestTTLRoundsUp(t *testing.T) {
	t.Parallel()
	eachWay(t, testTTLRoundsUp)
}

func testTTLRoundsUp(t *testing.T, withServer bool) {
	srv := memcachetest.Start(t, nil)
	s, _ := fenceStore(t, srv, srv.Client(t), withServer)
	seen := map[int64]int{}
	for i := range 20 {
		tok := "a" + string(rune('a'+i))
		if err := s.Acquire(ctx(t), "r", tok, 2500*time.Millisecond); err != nil {
			t.Fatalf("Acquire(r, 2.5s) = %v", err)
		}
		it, found := item(t, srv, "p:r")
		if !found || it.TTL > 3 {
			t.Fatalf("item after Acquire(r, 2.5s) = %+v, found %v; want a TTL of at most 3s", it, found)
		}
		seen[it.TTL]++
		if err := s.Release(ctx(t), "r", tok); err != nil {
			t.Fatalf("Release(r) = %v", err)
		}
		if seen[3] > 0 {
			break
		}
	}
	if seen[3] == 0 {
		t.Fatalf("remaining TTLs seen after Acquire(r, 2.5s): %v; want 3 (2.5s rounded up) at least once", seen)
	}
}

// Keys on the server are the documented ones: prefix+resource for valid
// keys, prefix+"#"+SHA-256 for the others, so a locked resource can be
// found with memcached tools.
func TestKeysOnServer(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t), memcache.WithPrefix("app:"))
	for _, tt := range []struct{ resource, key string }{
		{"orders/42", "app:orders/42"},
		{"with space", hashedKey("app:", "with space")},
		{"#tag", hashedKey("app:", "#tag")},
		{strings.Repeat("k", 246), "app:" + strings.Repeat("k", 246)},
		{strings.Repeat("k", 247), hashedKey("app:", strings.Repeat("k", 247))},
	} {
		if err := s.Acquire(ctx(t), tt.resource, "tok-"+tt.resource, time.Minute); err != nil {
			t.Fatalf("Acquire(%.20q) = %v", tt.resource, err)
		}
		if it, found := item(t, srv, tt.key); !found || it.Value != "tok-"+tt.resource {
			t.Errorf("after Acquire(%.20q): key %.40q holds %+v, found %v; want the token", tt.resource, tt.key, it, found)
		}
	}
}

// The lockers refuse TTLs that the one-second granularity leaves without
// validity, and take the second off the validity of the others.
func TestGranularityInLockers(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t))
	if g := s.TTLGranularity(); g != time.Second {
		t.Fatalf("TTLGranularity() = %v; want 1s", g)
	}
	l, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.TryLock(ctx(t), "r", time.Second)
	if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "granularity") {
		t.Fatalf("TryLock(r, 1s) = %v; want lock.ErrInvalid naming the granularity", err)
	}
	start := time.Now()
	held, err := l.TryLock(ctx(t), "r", 3*time.Second)
	if err != nil {
		t.Fatalf("TryLock(r, 3s) = %v", err)
	}
	if max := start.Add(2 * time.Second); held.ValidUntil.After(max) {
		t.Errorf("TryLock(r, 3s): ValidUntil is %v after the call began; want at most 2s (the TTL less the granularity)", held.ValidUntil.Sub(start))
	}
	if err := l.Unlock(ctx(t), held); err != nil {
		t.Fatalf("Unlock = %v", err)
	}
}

func TestInvalidArguments(t *testing.T) {
	t.Parallel()
	s := newStore(t, gomemcache.New("127.0.0.1:1")) // never reached
	ext := lock.Extender(s)
	bg := context.Background()
	for _, tt := range []struct {
		call string
		err  error
	}{
		{"Acquire(empty resource)", s.Acquire(bg, "", "a", time.Second)},
		{"Acquire(empty token)", s.Acquire(bg, "r", "", time.Second)},
		{"Acquire(ttl 0)", s.Acquire(bg, "r", "a", 0)},
		{"Acquire(ttl -1s)", s.Acquire(bg, "r", "a", -time.Second)},
		{"Acquire(ttl past 2038)", s.Acquire(bg, "r", "a", 200*365*24*time.Hour)},
		{"Release(empty resource)", s.Release(bg, "", "a")},
		{"Release(empty token)", s.Release(bg, "r", "")},
		{"Extend(ttl 0)", ext.Extend(bg, "r", "a", 0)},
		{"Extend(empty token)", ext.Extend(bg, "r", "", time.Second)},
	} {
		if !errors.Is(tt.err, lock.ErrInvalid) {
			t.Errorf("%s = %v; want lock.ErrInvalid", tt.call, tt.err)
		}
	}
	if _, err := s.Exists(bg, ""); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Exists(empty resource) = %v; want lock.ErrInvalid", err)
	}
}

// A call with a canceled context sends nothing: the server counts no
// command.
func TestCanceledContextSendsNothing(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t))
	if err := s.Acquire(ctx(t), "held", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	before := commands(t, srv)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	errs := map[string]error{
		"Acquire": s.Acquire(canceled, "free", "a", time.Minute),
		"Release": s.Release(canceled, "held", "a"),
		"Extend":  s.Extend(canceled, "held", "a", time.Minute),
	}
	_, errs["Exists"] = s.Exists(canceled, "held")
	for call, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context = %v; want context.Canceled", call, err)
		}
	}
	if after := commands(t, srv); after != before {
		t.Errorf("memcached counted %d commands during calls with a canceled context; want 0", after-before)
	}
}

// commands returns the number of get and store commands srv has served.
func commands(t *testing.T, srv *memcachetest.Server) int64 {
	t.Helper()
	var n int64
	for _, stat := range []string{"cmd_get", "cmd_set", "cmd_touch"} {
		v, err := srv.Stat(stat)
		if err != nil {
			t.Fatal(err)
		}
		n += v
	}
	return n
}

// On a paused server, calls return when their context ends — with the
// context's error, never a lock outcome — long before the client's
// 30-second timeout would end them.
func TestContextEndsCallOnPausedServer(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	client := srv.Client(t)
	client.Timeout = 30 * time.Second
	s := newStore(t, client)
	if err := s.Acquire(ctx(t), "held", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Resume() }()

	calls := map[string]func(context.Context) error{
		"Acquire": func(c context.Context) error { return s.Acquire(c, "free", "b", time.Minute) },
		"Release": func(c context.Context) error { return s.Release(c, "held", "a") },
		"Extend":  func(c context.Context) error { return s.Extend(c, "held", "a", time.Minute) },
		"Exists": func(c context.Context) error {
			held, err := s.Exists(c, "held")
			if held {
				return errors.New("held = true")
			}
			return err
		},
	}
	for name, call := range calls {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		err := call(c)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("%s with a 20ms deadline on a paused server = %v; want context.DeadlineExceeded", name, err)
		}

		c, cancelNow := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- call(c) }()
		cancelNow() // before or after the request is sent: either way, context.Canceled
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("%s canceled on a paused server = %v; want context.Canceled", name, err)
		}
	}
}

// An Extend whose context ends between its gets and its cas sends no cas:
// the lock keeps its TTL. A Release in the same case goes on in the
// background and frees the lock.
func TestContextEndsBeforeCAS(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t), memcache.WithPrefix("p:"))
	if err := s.Acquire(ctx(t), "r", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	cancelInWindow := func() (context.Context, <-chan struct{}) {
		c, cancel := context.WithCancel(context.Background())
		passed := make(chan struct{})
		memcache.SetBeforeCAS(s, func(string) { cancel(); close(passed) })
		return c, passed
	}

	c, passed := cancelInWindow()
	if err := s.Extend(c, "r", "a", time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Extend canceled between gets and cas = %v; want context.Canceled", err)
	}
	<-passed // the store's goroutine passed the hook; a cas, if sent, follows at once
	if it, found := item(t, srv, "p:r"); !found || it.Value != "a" || it.TTL > 60 {
		t.Errorf("after Extend(r, a, 1h) canceled between gets and cas: item %+v, found %v; want token a with its 60s TTL", it, found)
	}

	c, passed = cancelInWindow()
	// The caller may also see the release done, if the cas is answered
	// before it wakes up to its canceled context.
	if err := s.Release(c, "r", "a"); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Release canceled between gets and cas = %v; want context.Canceled or nil", err)
	}
	<-passed
	memcache.SetBeforeCAS(s, nil)
	if !eventually(func() bool { return casHits(t, srv) == 1 }) {
		t.Fatalf("memcached served %d successful cas commands; want exactly 1, the release's", casHits(t, srv))
	}
	if _, found := item(t, srv, "p:r"); found {
		t.Error("r is still held after the Release canceled between gets and cas went on")
	}
}

// casHits returns the number of successful cas commands srv has served.
func casHits(t *testing.T, srv *memcachetest.Server) int64 {
	t.Helper()
	n, err := srv.Stat("cas_hits")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// eventually polls cond every few milliseconds for up to 10 seconds.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); ; {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An Acquire abandoned on a paused server leaves its add on the way; the
// caller's Release by token (abandoned too) must not overtake it, or the
// add would land after the release and leave a lock nobody holds. The
// same holds for AcquireFenced, whose add is followed by an incr.
func TestReleaseAfterAbandonedAcquire(t *testing.T) {
	t.Parallel()
	for name, acquire := range map[string]func(s *memcache.Store, c context.Context, tok string) error{
		"Acquire": func(s *memcache.Store, c context.Context, tok string) error {
			return s.Acquire(c, "r", tok, time.Minute)
		},
		"AcquireFenced": func(s *memcache.Store, c context.Context, tok string) error {
			_, err := s.AcquireFenced(c, "r", tok, time.Minute)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := memcachetest.Start(t, nil)
			s := newStore(t, srv.Client(t), memcache.WithPrefix("p:"))
			for i := range 20 {
				tok := fmt.Sprintf("a%d", i)
				if err := srv.Pause(); err != nil {
					t.Fatal(err)
				}
				c, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				err := acquire(s, c, tok)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("round %d: %s on a paused server = %v; want context.DeadlineExceeded", i, name, err)
				}
				c, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
				err = s.Release(c, "r", tok)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("round %d: Release on a paused server = %v; want context.DeadlineExceeded", i, err)
				}
				if err := srv.Resume(); err != nil {
					t.Fatal(err)
				}
				// Both requests now go through; the add first, then the release.
				if !eventually(func() bool { return casHits(t, srv) == int64(i+1) }) {
					it, found := item(t, srv, "p:r")
					t.Fatalf("round %d: memcached served %d successful cas commands; want %d, one release per round (r: %+v, found %v)", i, casHits(t, srv), i+1, it, found)
				}
				if it, found := item(t, srv, "p:r"); found {
					t.Fatalf("round %d: r is held (%+v) after the abandoned %s and Release went through; want it free", i, it, name)
				}
			}
		})
	}
}

// Failures are errors, never lock outcomes.
func TestDeadServer(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t))
	if err := s.Acquire(ctx(t), "r", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	for i := range 2 { // the first call may meet a pooled connection, the second dials
		if err := s.Acquire(ctx(t), "r", "b", time.Minute); err == nil || errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("call %d: Acquire on a dead server = %v; want an error other than ErrNotAcquired", i, err)
		}
		if err := s.Release(ctx(t), "r", "a"); err == nil || errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("call %d: Release on a dead server = %v; want an error other than ErrNotHeld", i, err)
		}
		if err := s.Extend(ctx(t), "r", "a", time.Minute); err == nil || errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("call %d: Extend on a dead server = %v; want an error other than ErrNotHeld", i, err)
		}
		if _, err := s.Exists(ctx(t), "r"); err == nil {
			t.Errorf("call %d: Exists on a dead server = nil error; want an error", i)
		}
		if _, err := s.AcquireFenced(ctx(t), "r", "b", time.Minute); err == nil || errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("call %d: AcquireFenced on a dead server = %v; want an error other than ErrNotAcquired", i, err)
		}
		if err := s.RaiseFence(ctx(t), "r", 1); err == nil {
			t.Errorf("call %d: RaiseFence on a dead server = nil; want an error", i)
		}
	}
}

// With CAS disabled (-C) Release and Extend cannot be safe; they say so
// instead of reporting the lock not held.
func TestCASDisabled(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, &memcachetest.Options{Args: []string{"-C"}})
	s := newStore(t, srv.Client(t))
	if err := s.Acquire(ctx(t), "r", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Release": s.Release(ctx(t), "r", "a"),
		"Extend":  s.Extend(ctx(t), "r", "a", time.Minute),
	} {
		if err == nil || errors.Is(err, lock.ErrNotHeld) || !strings.Contains(err.Error(), "CAS disabled") {
			t.Errorf("%s on a memcached run with -C = %v; want an error saying CAS is disabled", name, err)
		}
	}
}

// The store claims only what memcached can do honestly.
func TestCapabilities(t *testing.T) {
	var s lock.Store = newStore(t, gomemcache.New("127.0.0.1:1"))
	if _, ok := s.(lock.FenceRaiser); !ok {
		t.Error("the store does not implement lock.FenceRaiser")
	}
	if _, ok := s.(lock.TTLReader); ok {
		t.Error("the store implements lock.TTLReader; gomemcache cannot read a TTL")
	}
	if _, ok := s.(lock.Waiter); ok {
		t.Error("the store implements lock.Waiter; memcached cannot notify releases")
	}
	if _, ok := s.(lock.Extender); !ok {
		t.Error("the store does not implement lock.Extender")
	}
}
