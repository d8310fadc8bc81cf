package redissuite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// queuedCall is a queued acquisition running in a goroutine.
type queuedCall struct {
	token  string
	done   chan struct{}
	fence  uint64
	err    error
	queued atomic.Bool // its Queued was called
}

// queue starts a queued acquisition of r under token on s, waiting up to
// wait in line.
func queue(ctx context.Context, s Store, r, token string, fenced bool, wait time.Duration) *queuedCall {
	c := &queuedCall{token: token, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.fence, c.err = s.AcquireQueued(ctx, lock.QueuedAcquisition{
			Resource: r, Token: token, TTL: time.Minute, Fenced: fenced, Wait: wait,
			Queued: func() { c.queued.Store(true) },
		})
	}()
	return c
}

// returned reports whether c has returned.
func (c *queuedCall) returned() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// await waits for c to return, failing t if ctx ends first.
func (c *queuedCall) await(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-c.done:
	case <-ctx.Done():
		t.Fatalf("AcquireQueued(%s) still waiting", c.token)
	}
}

// lockHolds fails t unless the lock at key holds token.
func lockHolds(t *testing.T, srv *redistest.Server, key, token string) {
	t.Helper()
	if got, err := srv.Do("GET", key).ToString(); err != nil || got != token {
		t.Fatalf("the lock holds %q (%v); want %q", got, err, token)
	}
}

// testQueuedServedInOrder: queued acquisitions of three processes get
// the lock in the order they got in line, each handed the lock by the
// release before it (the lock holds its token, and no other caller can
// take it in between), with fences that increase.
func (f Factory) testQueuedServedInOrder(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("q:"))
	fence, err := holder.AcquireFenced(ctx, "r", "h", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var calls []*queuedCall
	var stores []Store
	for i := range 3 {
		s := f.Server(t, srv, redisstore.WithPrefix("q:"))
		c := queue(ctx, s, "r", fmt.Sprintf("t%d", i), true, time.Minute)
		waitersInLine(t, srv, "q:{r}", int64(i+1))
		calls, stores = append(calls, c), append(stores, s)
	}
	for i, c := range calls {
		if !c.queued.Load() {
			t.Errorf("AcquireQueued(%s) got in line without calling Queued", c.token)
		}
		if c.returned() {
			t.Fatalf("AcquireQueued(%s) = %v before the lock was released; want it waiting", c.token, c.err)
		}
		prev, prevToken := holder, "h"
		if i > 0 {
			prev, prevToken = stores[i-1], calls[i-1].token
		}
		if err := prev.Release(ctx, "r", prevToken); err != nil {
			t.Fatalf("Release(r, %s) = %v", prevToken, err)
		}
		c.await(t, ctx)
		if c.err != nil {
			t.Fatalf("AcquireQueued(%s) = %v after the release; want the lock", c.token, c.err)
		}
		lockHolds(t, srv, "q:{r}", c.token)
		if c.fence <= fence {
			t.Errorf("AcquireQueued(%s) fence %d; want more than the previous holder's %d", c.token, c.fence, fence)
		}
		fence = c.fence
		for _, later := range calls[i+1:] {
			if later.returned() {
				t.Fatalf("AcquireQueued(%s) = %v while %s holds the lock; want it waiting its turn", later.token, later.err, c.token)
			}
		}
		// Nobody else can take it meanwhile.
		if err := holder.Acquire(ctx, "r", "x", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Acquire(r) by a newcomer while %s holds it = %v; want ErrNotAcquired", c.token, err)
		}
	}
	if err := stores[2].Release(ctx, "r", calls[2].token); err != nil {
		t.Fatal(err)
	}
	if ok, err := holder.Exists(ctx, "r"); err != nil || ok {
		t.Fatalf("Exists(r) after the last release = %v, %v; want false", ok, err)
	}
}

// testQueuedFreeTakesAtOnce: a queued acquisition of a free lock takes it
// at once, without getting in line; unfenced, its fence is 0.
func (f Factory) testQueuedFreeTakesAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	s := f.Server(t, srv, redisstore.WithPrefix("qf:"))
	for _, fenced := range []bool{false, true} {
		queued := false
		fence, err := s.AcquireQueued(ctx, lock.QueuedAcquisition{Resource: "r", Token: "t", TTL: time.Minute, Fenced: fenced, Wait: time.Minute, Queued: func() { queued = true }})
		switch {
		case err != nil:
			t.Fatalf("AcquireQueued(free r, fenced %v) = %v; want the lock", fenced, err)
		case queued:
			t.Errorf("AcquireQueued(free r, fenced %v) called Queued", fenced)
		case fenced == (fence == 0):
			t.Errorf("AcquireQueued(free r, fenced %v) fence = %d", fenced, fence)
		}
		lockHolds(t, srv, "qf:{r}", "t")
		if err := s.Release(ctx, "r", "t"); err != nil {
			t.Fatal(err)
		}
	}
}

// testQueuedWaitRunsOut: a queued acquisition whose wait runs out returns
// ErrNotAcquired and leaves the line; the release after it frees the lock
// rather than handing it to the token that left.
func (f Factory) testQueuedWaitRunsOut(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("qw:"))
	s := f.Server(t, srv, redisstore.WithPrefix("qw:"))
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err := s.AcquireQueued(ctx, lock.QueuedAcquisition{Resource: "r", Token: "t", TTL: time.Minute, Wait: 100 * time.Millisecond})
	if !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("AcquireQueued(held r) with a wait that runs out = %v; want ErrNotAcquired", err)
	}
	waitersInLine(t, srv, "qw:{r}", 0)
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	if ok, err := holder.Exists(ctx, "r"); err != nil || ok {
		t.Fatalf("Exists(r) after the release = %v, %v; want false: the lock went to a caller that left", ok, err)
	}
}

// testQueuedCanceledPassesOn: a queued acquisition whose context ends
// returns the context's error and gives up its place: the next in line
// gets the lock at the release.
func (f Factory) testQueuedCanceledPassesOn(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("qc:"))
	s := f.Server(t, srv, redisstore.WithPrefix("qc:"))
	other := f.Server(t, srv, redisstore.WithPrefix("qc:"))
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	gone := queue(cctx, s, "r", "gone", false, time.Minute)
	waitersInLine(t, srv, "qc:{r}", 1)
	next := queue(ctx, other, "r", "next", false, time.Minute)
	waitersInLine(t, srv, "qc:{r}", 2)
	cancel()
	gone.await(t, ctx)
	if !errors.Is(gone.err, context.Canceled) {
		t.Fatalf("AcquireQueued with its context canceled = %v; want context.Canceled", gone.err)
	}
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	next.await(t, ctx)
	if next.err != nil {
		t.Fatalf("AcquireQueued(next) = %v; want the lock, which the canceled caller gave up", next.err)
	}
	lockHolds(t, srv, "qc:{r}", "next")
}

// testQueuedGrantNobodyTakesIsReturned: a grant published for a token no
// caller of the process waits for (its call ended as the grant came) is
// released by the process, which hands the lock to the next in line.
func (f Factory) testQueuedGrantNobodyTakesIsReturned(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("qg:"))
	s := f.Server(t, srv, redisstore.WithPrefix("qg:"))
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	waiter := queue(ctx, s, "r", "w", false, time.Minute)
	waitersInLine(t, srv, "qg:{r}", 1)
	entry, err := srv.Do("LINDEX", "qg:{r}"+redisstore.WaitersSuffix, "0").ToString()
	if err != nil {
		t.Fatal(err)
	}
	id := entry[:len(entry)-len(":60000:0:w")]
	// As a release would grant the lock to a caller of the process whose
	// call ended: the lock is set to its token and the grant published.
	if err := srv.Do("SET", "qg:{r}", "left", "PX", "60000").Error(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Do("SPUBLISH", redisstore.ChannelOf("qg:{r}", id), "0:left").Error(); err != nil {
		t.Fatal(err)
	}
	waiter.await(t, ctx)
	if waiter.err != nil {
		t.Fatalf("AcquireQueued(w) = %v; want the lock, released by the process that got a grant nobody took", waiter.err)
	}
	lockHolds(t, srv, "qg:{r}", "w")
}

// testQueuedSkipsGoneProcesses: a release skips the entries in line whose
// subscription nobody listens to on the server (their process is gone)
// and grants the lock to the first that is there.
func (f Factory) testQueuedSkipsGoneProcesses(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("qs:"))
	s := f.Server(t, srv, redisstore.WithPrefix("qs:"))
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := srv.Do("RPUSH", "qs:{r}"+redisstore.WaitersSuffix, "gone1:60000:1:g1", "gone2:60000:0:g2").Error(); err != nil {
		t.Fatal(err)
	}
	waiter := queue(ctx, s, "r", "w", true, time.Minute)
	waitersInLine(t, srv, "qs:{r}", 3)
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	waiter.await(t, ctx)
	if waiter.err != nil {
		t.Fatalf("AcquireQueued(w) behind gone processes = %v; want the lock", waiter.err)
	}
	lockHolds(t, srv, "qs:{r}", "w")
}

// testQueuedTakesExpiredLock: a lock that expires instead of being
// released goes to the first in line.
func (f Factory) testQueuedTakesExpiredLock(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("qe:"))
	s := f.Server(t, srv, redisstore.WithPrefix("qe:"))
	fence, err := holder.AcquireFenced(ctx, "r", "h", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	waiter := queue(ctx, s, "r", "w", true, time.Minute)
	waiter.await(t, ctx)
	if waiter.err != nil {
		t.Fatalf("AcquireQueued(w) while the lock expires = %v; want the lock", waiter.err)
	}
	if waiter.fence <= fence {
		t.Errorf("AcquireQueued(w) after the expiry: fence %d; want more than the expired holder's %d", waiter.fence, fence)
	}
	lockHolds(t, srv, "qe:{r}", "w")
}

// testQueuedBehindWaitReleaseWaiter: a WaitRelease waiter ahead of a
// queued acquisition is woken by the release (and the lock reserved for
// it) as before; the queued acquisition gets the lock at the next.
func (f Factory) testQueuedBehindWaitReleaseWaiter(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("qm:"))
	waiter := f.Server(t, srv, redisstore.WithPrefix("qm:"))
	s := f.Server(t, srv, redisstore.WithPrefix("qm:"))
	redisstore.SetReservationTTL(f.Engine(holder), time.Minute)
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	woken := make(chan error, 1)
	go func() { woken <- waiter.WaitRelease(ctx, "r") }()
	waitersInLine(t, srv, "qm:{r}", 1)
	q := queue(ctx, s, "r", "q", false, time.Minute)
	waitersInLine(t, srv, "qm:{r}", 2)
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	if err := <-woken; err != nil {
		t.Fatalf("WaitRelease = %v; want nil at the release", err)
	}
	if err := waiter.Acquire(ctx, "r", "w", time.Minute); err != nil {
		t.Fatalf("the woken waiter's Acquire = %v; want the lock reserved for it", err)
	}
	if q.returned() {
		t.Fatalf("AcquireQueued(q) = %v while the woken waiter holds the lock", q.err)
	}
	if err := waiter.Release(ctx, "r", "w"); err != nil {
		t.Fatal(err)
	}
	q.await(t, ctx)
	if q.err != nil {
		t.Fatalf("AcquireQueued(q) = %v after the woken waiter released; want the lock", q.err)
	}
	lockHolds(t, srv, "qm:{r}", "q")
}

// testQueuedUnsupported: a store under the restart guard or with
// WithWaitReplicas does not queue: AcquireQueued reports
// errors.ErrUnsupported and sends nothing (the lockers then wait with
// WaitRelease, as the root package's tests check).
func (f Factory) testQueuedUnsupported(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	for _, opt := range []redisstore.Option{redisstore.WithRestartGuard(time.Minute), redisstore.WithWaitReplicas(1, time.Second)} {
		s := f.Server(t, srv, opt)
		before := commandCalls(t, srv, "evalsha") + commandCalls(t, srv, "eval") + commandCalls(t, srv, "set")
		_, err := s.AcquireQueued(ctx, lock.QueuedAcquisition{Resource: "r", Token: "t", TTL: time.Second, Wait: time.Second})
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("AcquireQueued on %v = %v; want errors.ErrUnsupported", s, err)
		}
		if after := commandCalls(t, srv, "evalsha") + commandCalls(t, srv, "eval") + commandCalls(t, srv, "set"); after != before {
			t.Errorf("AcquireQueued on %v sent %d commands; want none", s, after-before)
		}
	}
}

// testQueuedLockerEvents: a SingleLocker's Lock that waits in line tells
// its hook what a Lock that waits for a release always told it: an
// attempt refused, a wait, and the attempt that took the lock.
func (f Factory) testQueuedLockerEvents(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("qh:"))
	s := f.Server(t, srv, redisstore.WithPrefix("qh:"))
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	var events eventLog
	l, err := lock.NewSingle(s, &lock.Options{Hook: &events})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var held lock.Lock
	go func() {
		var err error
		held, err = l.Lock(ctx, "r", time.Minute)
		got <- err
	}()
	waitersInLine(t, srv, "qh:{r}", 1)
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Lock = %v; want the lock once released", err)
	}
	lockHolds(t, srv, "qh:{r}", held.Token)
	want := []string{"attempt 1", "store call acquire: " + lock.ErrNotAcquired.Error(), "retry 1 waiting", "attempt 2", "store call acquire: <nil>", "acquired 2"}
	if got := events.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a Lock that waited in line told its hook %q; want %q", got, want)
	}
	if err := l.Unlock(ctx, held); err != nil {
		t.Fatal(err)
	}
}

// eventLog is a hook that writes down the events of acquisitions.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (h *eventLog) Observe(_ context.Context, e lock.Event) {
	var s string
	switch e.Kind {
	case lock.EventAttempt:
		s = fmt.Sprintf("attempt %d", e.Attempt)
	case lock.EventStoreCall:
		if e.Op != "lock" {
			return
		}
		s = fmt.Sprintf("store call %s: %v", e.StoreOp, e.Err)
	case lock.EventRetry:
		s = fmt.Sprintf("retry %d", e.Attempt)
		if e.Waiting {
			s += " waiting"
		}
	case lock.EventAcquired:
		s = fmt.Sprintf("acquired %d", e.Attempt)
	default:
		return
	}
	h.mu.Lock()
	h.events = append(h.events, s)
	h.mu.Unlock()
}

func (h *eventLog) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

// testQueued runs the tests of queued acquisitions.
func (f Factory) testQueued(t *testing.T) {
	t.Run("ServedInOrder", f.testQueuedServedInOrder)
	t.Run("FreeTakesAtOnce", f.testQueuedFreeTakesAtOnce)
	t.Run("WaitRunsOut", f.testQueuedWaitRunsOut)
	t.Run("CanceledPassesOn", f.testQueuedCanceledPassesOn)
	t.Run("GrantNobodyTakesIsReturned", f.testQueuedGrantNobodyTakesIsReturned)
	t.Run("SkipsGoneProcesses", f.testQueuedSkipsGoneProcesses)
	t.Run("TakesExpiredLock", f.testQueuedTakesExpiredLock)
	t.Run("BehindWaitReleaseWaiter", f.testQueuedBehindWaitReleaseWaiter)
	t.Run("Unsupported", f.testQueuedUnsupported)
	t.Run("LockerEvents", f.testQueuedLockerEvents)
	t.Run("TakesFreeLockWhileSubscribed", f.testQueuedTakesFreeLockWhileSubscribed)
	t.Run("ForceReleaseHandsOver", f.testQueuedForceReleaseHandsOver)
	t.Run("LoadsExtend", f.testQueuedLoadsExtend)
}

// testQueuedTakesFreeLockWhileSubscribed: a queued acquisition of a
// process whose subscription to the lock is still there (a caller of the
// process waited for the lock lately) gets in line with commands, not the
// script; if that finds the lock free it takes it, with a fence above the
// last holder's, and leaves nothing in line.
func (f Factory) testQueuedTakesFreeLockWhileSubscribed(t *testing.T) {
	defer redisstore.SetLinger(time.Minute)()
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("qt:"))
	s := f.Server(t, srv, redisstore.WithPrefix("qt:"))
	fence, err := holder.AcquireFenced(ctx, "r", "h", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	w := queue(ctx, s, "r", "w", true, time.Minute)
	waitersInLine(t, srv, "qt:{r}", 1)
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	w.await(t, ctx)
	if w.err != nil {
		t.Fatalf("AcquireQueued(w) = %v after the release; want the lock", w.err)
	}
	if err := s.Release(ctx, "r", "w"); err != nil {
		t.Fatal(err)
	}
	// Fences by INCR: the store has read the server's clock (its first
	// fence lifts the counter), and lifts only when behind it.
	if _, err := s.AcquireFenced(ctx, "warm", "x", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "warm", "x"); err != nil {
		t.Fatal(err)
	}
	redisstore.HoldLifts(f.Engine(s))
	scripts, lrems := commandCalls(t, srv, "evalsha"), commandCalls(t, srv, "lrem")
	for _, fenced := range []bool{true, false} {
		token := fmt.Sprint("c", fenced)
		c := queue(ctx, s, "r", token, fenced, time.Minute)
		c.await(t, ctx)
		switch {
		case c.err != nil:
			t.Fatalf("AcquireQueued(%s, fenced %v) of a free lock while subscribed = %v; want the lock", token, fenced, c.err)
		case c.queued.Load():
			t.Errorf("AcquireQueued(%s) of a free lock called Queued", token)
		case fenced && c.fence <= w.fence:
			t.Errorf("AcquireQueued(%s) fence %d; want more than the last holder's %d", token, c.fence, w.fence)
		case !fenced && c.fence != 0:
			t.Errorf("AcquireQueued(%s, unfenced) fence %d; want 0", token, c.fence)
		}
		lockHolds(t, srv, "qt:{r}", token)
		if n, err := srv.Do("LLEN", "qt:{r}"+redisstore.WaitersSuffix).AsInt64(); err != nil || n != 0 {
			t.Errorf("%d entries (%v) left in line after AcquireQueued took the free lock; want none", n, err)
		}
		if err := s.Release(ctx, "r", token); err != nil {
			t.Fatal(err)
		}
	}
	// Through the commands: no queue script, and each took its entry out
	// of line with LREM (the two releases are the only scripts). Through
	// a client that does not enter with commands, the queue script.
	wantScripts, wantLREMs := int64(2), int64(2)
	if !redisstore.EntersWithCommands(f.Engine(s)) {
		wantScripts, wantLREMs = 4, 0
	}
	if got := commandCalls(t, srv, "evalsha") - scripts; got != wantScripts {
		t.Errorf("%d scripts run for two queued acquisitions of a free lock and their releases; want %d", got, wantScripts)
	}
	if got := commandCalls(t, srv, "lrem") - lrems; got != wantLREMs {
		t.Errorf("%d LREMs for two queued acquisitions that took a free lock; want %d", got, wantLREMs)
	}
	if w.fence <= fence {
		t.Errorf("AcquireQueued(w) fence %d; want more than the holder's %d", w.fence, fence)
	}
}

// testQueuedForceReleaseHandsOver: ForceRelease hands the lock to the
// first queued acquisition in line, as a release does: the lock holds its
// token as soon as ForceRelease returns, with a fence above the old
// holder's.
func (f Factory) testQueuedForceReleaseHandsOver(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("qx:"))
	s := f.Server(t, srv, redisstore.WithPrefix("qx:"))
	fence, err := holder.AcquireFenced(ctx, "r", "h", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w := queue(ctx, s, "r", "w", true, time.Minute)
	waitersInLine(t, srv, "qx:{r}", 1)
	if held, err := holder.ForceRelease(ctx, "r"); err != nil || !held {
		t.Fatalf("ForceRelease(r) = %v, %v; want true, nil", held, err)
	}
	lockHolds(t, srv, "qx:{r}", "w")
	w.await(t, ctx)
	if w.err != nil {
		t.Fatalf("AcquireQueued(w) after ForceRelease = %v; want the lock", w.err)
	}
	if w.fence <= fence {
		t.Errorf("AcquireQueued(w) fence %d after ForceRelease; want more than the old holder's %d", w.fence, fence)
	}
}

// testQueuedLoadsExtend: a queued acquisition that gets in line has the
// extend script loaded on the lock's server, so that the lockers'
// extension of a lock handed over after a long wait is one round trip
// (an EVALSHA answered NOSCRIPT takes two, and on a slow link the second
// can come after the lock expired).
func (f Factory) testQueuedLoadsExtend(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("ql:"))
	s := f.Server(t, srv, redisstore.WithPrefix("ql:"))
	if err := srv.Do("SCRIPT", "FLUSH").Error(); err != nil {
		t.Fatal(err)
	}
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	w := queue(ctx, s, "r", "w", false, time.Minute)
	waitersInLine(t, srv, "ql:{r}", 1)
	var sha string
	for _, sc := range redisstore.Scripts() {
		if sc.Name == "extend" {
			sha = sc.SHA
		}
	}
	exists, err := srv.Do("SCRIPT", "EXISTS", sha).ToArray()
	if err != nil || len(exists) != 1 {
		t.Fatalf("SCRIPT EXISTS = %v, %v", exists, err)
	}
	if n, _ := exists[0].AsInt64(); n != 1 {
		t.Errorf("the extend script is not loaded on the server while a queued acquisition waits; want it loaded, so that the extension after a long wait takes one round trip")
	}
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	w.await(t, ctx)
	if w.err != nil {
		t.Fatalf("AcquireQueued(w) = %v; want the lock", w.err)
	}
}
