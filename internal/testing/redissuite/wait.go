package redissuite

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/redis/rueidis"
)

// shardSubscribers returns how many connections are subscribed to
// releases of the lock at key on srv: waiters subscribe to shard channels
// of their own, named after the lock's waiters' queue.
func shardSubscribers(t *testing.T, srv *redistest.Server, key string) int64 {
	t.Helper()
	channels, err := srv.Do("PUBSUB", "SHARDCHANNELS", key+":waiters:*").AsStrSlice()
	if err != nil {
		t.Fatalf("PUBSUB SHARDCHANNELS %s:waiters:* = %v", key, err)
	}
	var n int64
	for _, ch := range channels {
		v, err := srv.Do("PUBSUB", "SHARDNUMSUB", ch).ToArray()
		if err != nil || len(v) != 2 {
			t.Fatalf("PUBSUB SHARDNUMSUB %s = %v, %v", ch, v, err)
		}
		c, err := v[1].AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		n += c
	}
	return n
}

// noSubscriptionsLeft checks that nothing of the waits stays behind.
func noSubscriptionsLeft(t *testing.T, srv *redistest.Server, key string) {
	t.Helper()
	eventually(t, "unsubscribed on the server", func() bool { return shardSubscribers(t, srv, key) == 0 })
	eventually(t, "unsubscribed in the process", func() bool { return redisstore.Subscriptions() == 0 })
}

// testWaitersTakeTurns: waiters of one process share one subscription,
// and each release wakes one of them.
func (f Factory) testWaitersTakeTurns(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("wait:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	const waiters = 5
	wctx := ctxFor(t, 10*time.Second)
	var wg sync.WaitGroup
	woken := make(chan error, waiters)
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			woken <- s.WaitRelease(wctx, "r")
		}()
	}
	// The waiters share one subscription, made before they look.
	eventually(t, "subscribed", func() bool { return shardSubscribers(t, srv, "wait:{r}") == 1 })
	for turn := range waiters {
		time.Sleep(50 * time.Millisecond) // let the waiters reach their wait
		select {
		case err := <-woken:
			t.Fatalf("turn %d: WaitRelease returned %v while r is held for a minute", turn, err)
		default:
		}
		if n := shardSubscribers(t, srv, "wait:{r}"); n != 1 {
			t.Fatalf("turn %d: %d subscriptions for the waiters of one process; want 1", turn, n)
		}
		if err := s.Release(ctx, "r", "holder"); err != nil {
			t.Fatal(err)
		}
		if err := <-woken; err != nil { // bounded by wctx
			t.Fatalf("turn %d: WaitRelease after Release = %v; want nil", turn, err)
		}
		// The woken caller would take the lock now; the others wait on.
		if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	noSubscriptionsLeft(t, srv, "wait:{r}")
}

// testWaitersOfOneProcessLongestFirst: the waiters of one process share
// a subscription that wakes them longest-waiting first, also once they
// have looked at the lock again (now and then while it is held, see
// firstRelook): a look keeps the caller's place in the process's line,
// as in the server's. Looking again used to put the caller at the end of
// the process's line, so that waiters that had come 100ms apart were
// woken in an order of their looks, not of their arrival.
func (f Factory) testWaitersOfOneProcessLongestFirst(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("wait:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	const waiters = 4
	wctx := ctxFor(t, 20*time.Second)
	type wake struct {
		waiter int
		err    error
	}
	woken := make(chan wake, waiters) // in the order the waiters return
	for i := range waiters {
		go func() { woken <- wake{i, s.WaitRelease(wctx, "r")} }()
		// Apart by more than the first looks again (50ms, 100ms...),
		// so that each waiter looks again while later ones are in line.
		time.Sleep(120 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	for turn := range waiters {
		if err := s.Release(ctx, "r", "holder"); err != nil {
			t.Fatal(err)
		}
		w := <-woken // bounded: WaitRelease ends with wctx
		if w.err != nil {
			t.Fatalf("waiter %d: WaitRelease = %v; want nil", w.waiter, w.err)
		}
		if w.waiter != turn {
			t.Fatalf("release %d woke waiter %d first; want waiter %d, the longest waiting", turn, w.waiter, turn)
		}
		// The woken caller takes the lock now: a reservation for its
		// subscription, which its process claims (see Acquire).
		if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}

// testWaitCanceledWaiterLeavesQueue: a waiter that left does not take
// the next release's wake from the one behind it.
func (f Factory) testWaitCanceledWaiterLeavesQueue(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("pass:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	first, cancelFirst := context.WithCancel(ctx)
	defer cancelFirst()
	firstDone := make(chan error, 1)
	go func() { firstDone <- s.WaitRelease(first, "r") }()
	eventually(t, "subscribed", func() bool { return shardSubscribers(t, srv, "pass:{r}") == 1 })
	time.Sleep(50 * time.Millisecond) // the first is now the longest waiting
	secondDone := make(chan error, 1)
	go func() { secondDone <- s.WaitRelease(ctx, "r") }()
	time.Sleep(50 * time.Millisecond)
	cancelFirst()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("first WaitRelease after its ctx was canceled = %v", err)
	}
	if err := s.Release(ctx, "r", "holder"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-secondDone:
		if err != nil {
			t.Fatalf("second WaitRelease = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second WaitRelease not woken by the release after the first left")
	}
}

// testWaitLeftEntriesDoNotWake: a caller that stopped waiting without a
// wake (as a locker's bounded wait does) leaves its subscription's entry
// in line while the subscription lingers; when the caller waits again,
// that stale entry must not wake it ahead of a caller of another process
// that got in line after the entry and has waited longer. (Which
// subscription a release woke is seen on its channel: waiters look again
// now and then, so who returns first proves nothing.)
func (f Factory) testWaitLeftEntriesDoNotWake(t *testing.T) {
	srv := redistest.Start(t)
	a := f.Server(t, srv, redisstore.WithPrefix("stale:"))
	b := f.Server(t, srv, redisstore.WithPrefix("stale:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := a.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	const queue = "stale:{r}:waiters"
	wait := func(s Store, ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() { done <- s.WaitRelease(ctx, "r") }()
		return done
	}
	first, cancelFirst := context.WithCancel(ctx)
	defer cancelFirst()
	firstDone := wait(a, first)
	eventually(t, "a in line", func() bool { n, err := srv.Do("LLEN", queue).AsInt64(); return err == nil && n == 1 })
	_ = wait(b, ctx)
	eventually(t, "b in line", func() bool { n, err := srv.Do("LLEN", queue).AsInt64(); return err == nil && n == 2 })
	bEntry, err := srv.Do("LINDEX", queue, "-1").ToString()
	if err != nil {
		t.Fatal(err)
	}
	// Hear what b's subscription hears.
	listener := srv.NewClient(t)
	woke := make(chan struct{}, 1)
	go func() {
		_ = listener.Receive(ctx, listener.B().Ssubscribe().Channel(redisstore.ChannelOf("stale:{r}", bEntry)).Build(), func(rueidis.PubSubMessage) {
			select {
			case woke <- struct{}{}:
			default:
			}
		})
	}()
	eventually(t, "listening", func() bool { return shardSubscribers(t, srv, "stale:{r}") == 3 })

	cancelFirst()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("a's first WaitRelease after its ctx was canceled = %v", err)
	}
	_ = wait(a, ctx) // at once: a's subscription lingers, with its entry
	eventually(t, "a back in line", func() bool {
		last, err := srv.Do("LINDEX", queue, "-1").ToString()
		return err == nil && last != bEntry
	})
	if err := a.Release(ctx, "r", "holder"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woke:
	case <-time.After(5 * time.Second):
		line, _ := srv.Do("LRANGE", queue, "0", "-1").AsStrSlice()
		t.Fatalf("the release did not wake b, first in line since a stopped waiting (line after it: %q, b is %q)", line, bEntry)
	}
}

// testWaitRechecksOnExpiry: a lock extended while waited for keeps the
// waiter waiting until the extended TTL runs out.
func (f Factory) testWaitRechecksOnExpiry(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitRelease(ctx, "r") }()
	if err := s.Extend(ctx, "r", "holder", 700*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitRelease = %v", err)
	}
	if held, err := s.Exists(ctx, "r"); err != nil || held {
		t.Fatalf("Exists(r) when WaitRelease returned = %v, %v; want false: it returned while the extended lock was held", held, err)
	}
}

// testWaitSeesKeyWithoutTTLDeleted: a key with no TTL at a lock's name
// (set by another client, or by an operator) is waited for as a lock is,
// and deleting it without a release (nothing announces it) frees the
// waiter, which looks again now and then, rather than leaving it waiting
// until its context ends.
func (f Factory) testWaitSeesKeyWithoutTTLDeleted(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("nottlwait:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := srv.Do("SET", "nottlwait:{r}", "set-by-hand").Error(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitRelease(ctx, "r") }()
	waitersInLine(t, srv, "nottlwait:{r}", 1)
	select {
	case err := <-done:
		t.Fatalf("WaitRelease(r) on a key without a TTL, before it was deleted = %v; want it waiting", err)
	default:
	}
	if err := srv.Do("DEL", "nottlwait:{r}").Error(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitRelease(r) on a key without a TTL, deleted = %v; want nil once the waiter looks again", err)
	}
	noSubscriptionsLeft(t, srv, "nottlwait:{r}")
}

// testWaitSeesShorterExpiry: a lock shortened while waited for (extended
// for less than the TTL the waiter saw) and left to expire frees the
// waiter soon after it expires, not at the TTL it saw.
func (f Factory) testWaitSeesShorterExpiry(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("short:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", time.Hour); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.WaitRelease(wctx, "r") }()
	eventually(t, "in line", func() bool {
		n, err := srv.Do("LLEN", "short:{r}:waiters").AsInt64()
		return err == nil && n == 1
	})
	if err := s.Extend(ctx, "r", "holder", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// The holder vanishes: its lock expires unreleased, an hour before the
	// TTL the waiter saw.
	if err := <-done; err != nil {
		t.Fatalf("WaitRelease of a lock shortened to 300ms and left to expire = %v; want nil soon after it expired (within the 20s the wait was given)", err)
	}
}

func (f Factory) testWaitAfterScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("flush:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitRelease(ctx, "r") }()
	eventually(t, "subscribed", func() bool { return shardSubscribers(t, srv, "flush:{r}") == 1 })
	if err := srv.Do("SCRIPT", "FLUSH").Error(); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "r", "holder"); err != nil { // by EVAL now
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitRelease = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitRelease not woken by a release made after SCRIPT FLUSH")
	}
}

// testWaitServerDies: a waiter learns at once that its server died.
func (f Factory) testWaitServerDies(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("dies:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitRelease(ctx, "r") }()
	eventually(t, "subscribed", func() bool { return shardSubscribers(t, srv, "dies:{r}") == 1 })
	srv.Kill()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, ctx.Err()) {
			t.Fatalf("WaitRelease when its server died = %v; want the connection's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitRelease still blocked 10s after its server died")
	}
	eventually(t, "unsubscribed in the process", func() bool { return redisstore.Subscriptions() == 0 })
}

func (f Factory) testWaitOnClusterLeavesNothing(t *testing.T) {
	c := redistest.SharedCluster(t)
	s := f.Cluster(t, c, redisstore.WithPrefix("cwait:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "}r{", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	key := "cwait:{%7Dr{}"
	master := c.MasterOf(t, redistest.Slot(key))
	done := make(chan error, 1)
	go func() { done <- s.WaitRelease(ctx, "}r{") }()
	eventually(t, "subscribed on the slot's master", func() bool { return shardSubscribers(t, master, key) == 1 })
	if err := s.Release(ctx, "}r{", "holder"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitRelease = %v", err)
	}
	noSubscriptionsLeft(t, master, key)
}

// testWaitCanceledOnStalledServer: a wait whose context ends while the
// server is stalled returns the context's error and, once the server
// answers again, has left nothing behind.
func (f Factory) testWaitCanceledOnStalledServer(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("early:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	err := s.WaitRelease(ctxFor(t, 100*time.Millisecond), "r")
	if rerr := srv.Resume(); rerr != nil {
		t.Fatal(rerr)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitRelease on a paused server = %v; want context.DeadlineExceeded", err)
	}
	noSubscriptionsLeft(t, srv, "early:{r}")
}

// testWaitStoresShareClient: two stores on one client and prefix share
// subscriptions, so neither ends the other's.
func (f Factory) testWaitStoresShareClient(t *testing.T) {
	srv := redistest.Start(t)
	client := f.Client(t, srv)
	a := f.On(t, client, redisstore.WithPrefix("share:"))
	b := f.On(t, client, redisstore.WithPrefix("share:"))
	ctx := ctxFor(t, 30*time.Second)
	if err := a.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	wctx := ctxFor(t, 10*time.Second)
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() { doneA <- a.WaitRelease(wctx, "r") }()
	eventually(t, "subscribed", func() bool { return shardSubscribers(t, srv, "share:{r}") == 1 })
	go func() { doneB <- b.WaitRelease(wctx, "r") }()
	// Both in line before the first release, so that both waits are
	// under way when the test counts the subscriptions.
	waitersInLine(t, srv, "share:{r}", 2)
	if n := shardSubscribers(t, srv, "share:{r}"); n != 1 {
		t.Fatalf("%d subscriptions for two stores sharing a client; want 1", n)
	}
	for turn, done := range []chan error{doneA, doneB} {
		if err := b.Release(ctx, "r", "holder"); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("turn %d: WaitRelease = %v", turn, err)
		}
		if err := a.Acquire(ctx, "r", "holder", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	noSubscriptionsLeft(t, srv, "share:{r}")
}

// testWaitOneWakeAcrossProcesses: waiters on separate clients (as in
// separate processes) get in line on the server; each release wakes the
// first of them only, in the order they got in line, and a wake that
// lands on a subscription whose caller left is handed on.
func (f Factory) testWaitOneWakeAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	a := f.Server(t, srv, redisstore.WithPrefix("line:"))
	b := f.Server(t, srv, redisstore.WithPrefix("line:"))
	redisstore.SetReservationTTL(f.Engine(a), time.Minute) // it must be handed on, not lapse
	ctx := ctxFor(t, 30*time.Second)
	inLine := func(n int64) {
		t.Helper()
		eventually(t, "in line", func() bool {
			got, err := srv.Do("LLEN", "line:{r}:waiters").AsInt64()
			return err == nil && got == n
		})
	}
	wait := func(s Store, ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() { done <- s.WaitRelease(ctx, "r") }()
		return done
	}
	blocked := func(what string, done <-chan error) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("%s returned %v; want it still waiting", what, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	woken := func(what string, done <-chan error) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s = %v; want nil", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s not woken 5s after the release", what)
		}
	}
	cycle := func() {
		t.Helper()
		if err := a.Release(ctx, "r", "holder"); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	first := wait(a, ctx)
	inLine(1)
	second := wait(b, ctx)
	inLine(2)
	cycle()
	woken("the first waiter in line", first)
	// The first takes the lock, as a woken waiter does (a waiter that
	// looks again meanwhile lets it: see wait.lua's handoff).
	if err := a.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	blocked("the second waiter, after one release", second)
	cycle()
	woken("the second waiter, after the second release", second)

	// A wake for a caller that left goes on to the next in line. (The
	// lock is the woken waiter's: reserved for it by the release.)
	if err := b.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	leaving, leave := context.WithCancel(ctx)
	gone := wait(a, leaving)
	inLine(1)
	next := wait(b, ctx)
	inLine(2)
	leave()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitRelease whose ctx was canceled = %v", err)
	}
	cycle() // pops the entry of the caller that left
	woken("the waiter behind a caller that left", next)
	// The reservation went on with the wake: the lock is the woken
	// waiter's, not the subscription's that had no caller.
	if err := b.Acquire(ctx, "r", "next", time.Minute); err != nil {
		t.Fatalf("Acquire by the waiter a handed-on wake woke = %v; want nil", err)
	}
}
