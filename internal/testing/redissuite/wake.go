package redissuite

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// testWakeSurvivesLaterWait: a release wakes a caller of a process and
// reserves the lock for the process's subscription; another caller of
// the process that begins to wait after the wake, before the woken
// caller's next attempt, leaves the reservation to that attempt, which
// takes the lock at once, and gets in line behind those already in it.
// (A wait begun then used to count as the woken caller coming back: it
// got in at the front, and the woken caller's acquisition sent SET NX,
// which its own process's reservation refused, so the lock stood idle
// until the reservation lapsed.)
func (f Factory) testWakeSurvivesLaterWait(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("wake:"))
	s := f.Server(t, srv, redisstore.WithPrefix("wake:"))     // the process of the callers
	other := f.Server(t, srv, redisstore.WithPrefix("wake:")) // another process
	// The reservation lapses only when the test ends: an acquisition
	// that does not claim it is refused however loaded the machine.
	redisstore.SetReservationTTL(f.Engine(holder), time.Minute)
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	wait := func(s Store) <-chan error {
		done := make(chan error, 1)
		go func() { done <- s.WaitRelease(ctx, "r") }()
		return done
	}

	// Both callers try and are refused, as the lockers do before they
	// wait. The first waits; so do a caller of another process and a
	// third caller of the first's process, which keeps the process's
	// subscription (whose id the reservation names) however long the
	// steps below take: alone, it lingers only briefly.
	if err := s.Acquire(ctx, "r", "c1", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire(r, c1) while held = %v; want ErrNotAcquired", err)
	}
	first := wait(s)
	waitersInLine(t, srv, "wake:{r}", 1)
	otherDone := wait(other)
	waitersInLine(t, srv, "wake:{r}", 2)
	otherID, err := srv.Do("LINDEX", "wake:{r}"+redisstore.WaitersSuffix, "1").ToString()
	if err != nil {
		t.Fatal(err)
	}
	keeper := wait(s)
	waitersInLine(t, srv, "wake:{r}", 3)
	if err := s.Acquire(ctx, "r", "c2", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire(r, c2) while held = %v; want ErrNotAcquired", err)
	}
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	// The release wakes one of the two callers of the process: the
	// longest waiting of its line, which a caller's look at the lock
	// again (50ms after it got in line) sends to the back. Whichever
	// it is, it is the first caller below, and the other the keeper.
	select {
	case err = <-first:
	case err = <-keeper:
		keeper = first
	case <-ctx.Done():
		t.Fatal("nobody woken by the release")
	}
	if err != nil {
		t.Fatalf("the woken caller's WaitRelease = %v; want nil", err)
	}

	// The second caller waits before the woken one tries again: once it
	// is in line on the server (the release took the first caller's
	// entry), its wait has begun.
	second := wait(s)
	waitersInLine(t, srv, "wake:{r}", 3)
	if err := s.Acquire(ctx, "r", "c1", time.Minute); err != nil {
		got, _ := srv.Do("GET", "wake:{r}").ToString()
		t.Fatalf("the woken caller's Acquire(r, c1), after another caller of its process began to wait = %v (the lock holds %q); want nil: the lock was reserved for its process", err, got)
	}

	// The second caller was not the woken caller coming back: it got in
	// line behind the other process's waiter.
	if head, err := srv.Do("LINDEX", "wake:{r}"+redisstore.WaitersSuffix, "0").ToString(); err != nil {
		t.Fatal(err)
	} else if head != otherID {
		t.Fatalf("the head of the line after a caller began to wait after a wake of its process is %q; want the other process's %q, which waited longer", head, otherID)
	}

	// Then everyone takes their turn: the other process, then the two
	// callers of the first (in either order: a waiter that looks at the
	// lock again joins its process's line anew).
	if err := s.Release(ctx, "r", "c1"); err != nil {
		t.Fatal(err)
	}
	if err := <-otherDone; err != nil {
		t.Fatalf("the other process's WaitRelease = %v; want nil", err)
	}
	if err := other.Acquire(ctx, "r", "o", time.Minute); err != nil {
		t.Fatalf("the other process's Acquire(r, o) after its wake = %v; want nil", err)
	}
	if err := other.Release(ctx, "r", "o"); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"x", "y"} {
		select {
		case err = <-keeper:
			keeper = nil
		case err = <-second:
			second = nil
		case <-ctx.Done():
			t.Fatal("nobody woken by the release")
		}
		if err != nil {
			t.Fatalf("WaitRelease = %v; want nil", err)
		}
		if err := s.Acquire(ctx, "r", token, time.Minute); err != nil {
			t.Fatalf("Acquire(r, %s) after its wake = %v; want nil", token, err)
		}
		if err := s.Release(ctx, "r", token); err != nil {
			t.Fatal(err)
		}
	}
	noSubscriptionsLeft(t, srv, "wake:{r}")
}

// testClaimOnlyAfterWake: an acquisition sends the claim script (which
// costs the server more than SET NX) only for a lock whose release woke
// a caller of its process, until the process tries to claim it; a fresh
// name, and a lock the process waits for with no wake, get SET NX. The
// server's command counts tell them apart: SET NX runs a SET (and, if
// refused, a GET after it on a client that reads refusals so), a claim a
// GET, and a SET if it takes the lock.
func (f Factory) testClaimOnlyAfterWake(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("claim:"))
	s := f.Server(t, srv, redisstore.WithPrefix("claim:"))
	redisstore.SetReservationTTL(f.Engine(holder), time.Minute)
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	// sent checks that s.Acquire(resource) answers want (nil or
	// ErrNotAcquired) and sends the claim script if claim, SET NX if not.
	sent := func(what, resource string, want error, claim bool) {
		t.Helper()
		set0, get0 := commandCalls(t, srv, "set"), commandCalls(t, srv, "get")
		if err := s.Acquire(ctx, resource, "s", time.Minute); !errors.Is(err, want) {
			t.Fatalf("%s: Acquire(%s, s) = %v; want %v", what, resource, err, want)
		}
		sets, gets := commandCalls(t, srv, "set")-set0, commandCalls(t, srv, "get")-get0
		sentClaim := gets > 0 // taken: a claim's GET; SET NX runs none
		if want != nil {
			sentClaim = sets == 0 // refused: SET NX ran its SET; a claim runs none
		}
		if sentClaim != claim {
			t.Fatalf("%s: Acquire(%s, s) ran %d SETs and %d GETs on the server: sent the claim script = %v; want %v", what, resource, sets, gets, sentClaim, claim)
		}
	}
	sent("a name nobody waits for", "fresh", nil, false)
	waiting := make(chan error, 1)
	go func() { waiting <- s.WaitRelease(ctx, "r") }()
	waitersInLine(t, srv, "claim:{r}", 1)
	sent("the process waits for r, no wake yet", "r", lock.ErrNotAcquired, false)
	sent("another name, while the process waits for r", "fresh2", nil, false)
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; err != nil {
		t.Fatalf("WaitRelease(r) = %v; want nil", err)
	}
	sent("another name, after a wake for r", "fresh3", nil, false)
	sent("the woken process, reserved for it", "r", nil, true)
	if err := s.Release(ctx, "r", "s"); err != nil {
		t.Fatal(err)
	}
	sent("after the claim", "r", nil, false)
}

// commandCalls returns how many times srv has run the command name
// (lower case), scripts' calls included.
func commandCalls(t *testing.T, srv *redistest.Server, name string) int64 {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats").ToString()
	if err != nil {
		t.Fatalf("INFO commandstats = %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+name+":calls=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(rest[:strings.IndexByte(rest+",", ',')], 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats: %q: %v", line, err)
		}
		return n
	}
	return 0
}

// testOwnReservationBeforeHandOn: a release reserves the lock for a
// process's subscription when none of its callers waits any more (a
// caller left the line after its process had got in line twice): the
// subscription hands the wake on, but an acquisition of the process that
// comes first takes the lock, reserved for its process, instead of being
// refused by it until the hand-on has run. The hand-on is held until the
// acquisition has answered.
func (f Factory) testOwnReservationBeforeHandOn(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("own:"))
	s := f.Server(t, srv, redisstore.WithPrefix("own:"))
	redisstore.SetReservationTTL(f.Engine(holder), time.Minute)
	redisstore.SetReservationTTL(f.Engine(s), time.Minute)
	// The subscription lingers only briefly after its last caller: the
	// steps from the first caller's wake to the release must take less.
	// Under a load that makes them take longer, try again.
	for try := range 5 {
		resource := fmt.Sprintf("r%d", try)
		key := "own:{" + resource + "}"
		if err := holder.Acquire(ctx, resource, "h", time.Minute); err != nil {
			t.Fatal(err)
		}
		first := make(chan error, 1)
		go func() { first <- s.WaitRelease(ctx, resource) }()
		waitersInLine(t, srv, key, 1)
		leftCtx, leave := context.WithCancel(ctx)
		left := make(chan error, 1)
		go func() { left <- s.WaitRelease(leftCtx, resource) }()
		waitersInLine(t, srv, key, 2)
		leave()
		if err := <-left; !errors.Is(err, context.Canceled) {
			t.Fatalf("a canceled WaitRelease(%s) = %v; want context.Canceled", resource, err)
		}
		handedOn, resume := redisstore.HoldHandOns()
		if err := holder.Release(ctx, resource, "h"); err != nil {
			t.Fatal(err)
		}
		if err := <-first; err != nil {
			t.Fatalf("WaitRelease(%s) = %v; want nil", resource, err)
		}
		if err := s.Acquire(ctx, resource, "a", time.Minute); err != nil {
			t.Fatalf("the woken caller's Acquire(%s, a) = %v; want nil", resource, err)
		}
		if err := s.Release(ctx, resource, "a"); err != nil {
			t.Fatal(err)
		}
		// The release popped the process's second entry, left by the
		// caller that went: the lock is reserved for the process, whose
		// subscription has no caller to wake (unless it was dropped).
		if v, err := srv.Do("GET", key).ToString(); err != nil || !strings.HasPrefix(v, redisstore.ReservationPrefix) {
			resume()
			t.Logf("try %d: the lock after the release holds %q, %v: the subscription was dropped first", try, v, err)
			continue
		}
		// The wake reaches the subscription after the release has
		// answered: wait until it has (and holds its hand-on).
		select {
		case <-handedOn:
		case <-ctx.Done():
			resume()
			t.Fatalf("the subscription did not get the wake of the reservation for its process")
		}
		err := s.Acquire(ctx, resource, "b", time.Minute)
		resume()
		if err != nil {
			got, _ := srv.Do("GET", key).ToString()
			t.Fatalf("Acquire(%s, b) by the process the lock is reserved for, before its subscription hands the wake on = %v (the lock holds %q); want nil", resource, err, got)
		}
		if err := s.Release(ctx, resource, "b"); err != nil {
			t.Fatal(err)
		}
		noSubscriptionsLeft(t, srv, key)
		return
	}
	t.Fatal("the subscription was dropped before the release in every try")
}

// testUnsentClaimIsClaimedAgain: the acquisition of a woken process
// claims the lock reserved for it; if that claim is never answered (its
// caller gives up before its shared batch goes out, so it is not sent),
// the process's next acquisition claims the reservation again. (The
// claim used to count as made: the next acquisition sent SET NX, which
// the process's own reservation refused until it lapsed.)
func (f Factory) testUnsentClaimIsClaimedAgain(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("unsent:"))
	s := f.Server(t, srv, redisstore.WithPrefix("unsent:"))
	// The reservation lapses only when the test ends: an acquisition
	// that does not claim it is refused however loaded the machine.
	redisstore.SetReservationTTL(f.Engine(holder), time.Minute)
	redisstore.ShareBatches(f.Engine(s))
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	wait := func() <-chan error {
		done := make(chan error, 1)
		go func() { done <- s.WaitRelease(ctx, "r") }()
		return done
	}
	// Two callers wait: one to be woken, and one that keeps the
	// process's subscription, whose id the reservation names.
	first := wait()
	waitersInLine(t, srv, "unsent:{r}", 1)
	keeper := wait()
	waitersInLine(t, srv, "unsent:{r}", 2)
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-first:
	case err = <-keeper:
		keeper = first
	case <-ctx.Done():
		t.Fatal("nobody woken by the release")
	}
	if err != nil {
		t.Fatalf("the woken caller's WaitRelease(r) = %v; want nil", err)
	}

	// The woken caller's acquisition, the claim, waits in its batch
	// until its caller gives up, and is not sent.
	reached, resume := redisstore.HoldBatches(f.Engine(s))
	defer resume()
	actx, giveUp := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- s.Acquire(actx, "r", "a", time.Minute) }()
	select {
	case <-reached:
	case <-ctx.Done():
		t.Fatal("the acquisition's batch never went out")
	}
	giveUp()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire(r, a) given up before its batch went out = %v; want context.Canceled", err)
	}
	resume()
	if v, err := srv.Do("GET", "unsent:{r}").ToString(); err != nil || !strings.HasPrefix(v, redisstore.ReservationPrefix) {
		t.Fatalf("the lock after the unsent claim holds %q, %v; want the reservation", v, err)
	}

	if err := s.Acquire(ctx, "r", "b", time.Minute); err != nil {
		got, _ := srv.Do("GET", "unsent:{r}").ToString()
		t.Fatalf("Acquire(r, b) after the process's claim went unsent = %v (the lock holds %q); want nil: the lock is reserved for the process", err, got)
	}
	if err := s.Release(ctx, "r", "b"); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-keeper:
	case <-ctx.Done():
		t.Fatal("the keeper was not woken by the release")
	}
	if err != nil {
		t.Fatalf("the keeper's WaitRelease(r) = %v; want nil", err)
	}
	if err := s.Acquire(ctx, "r", "c", time.Minute); err != nil {
		t.Fatalf("the keeper's Acquire(r, c) after its wake = %v; want nil", err)
	}
	if err := s.Release(ctx, "r", "c"); err != nil {
		t.Fatal(err)
	}
	noSubscriptionsLeft(t, srv, "unsent:{r}")
}

// testLostClaimReplyIsClaimedAgain: as testUnsentClaimIsClaimedAgain,
// for a claim that was sent and whose reply was lost: the server holds it
// back (CLIENT PAUSE WRITE) and its connection is killed before it runs.
// The next acquisition of the process claims the reservation again. On a
// client whose connection also carries the process's subscription
// (rueidis, over RESP3), the kill ends the subscription, and the count of
// its reservation with it: the test is skipped there.
func (f Factory) testLostClaimReplyIsClaimedAgain(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	holder := f.Server(t, srv, redisstore.WithPrefix("lost:"))
	s := f.Server(t, srv, redisstore.WithPrefix("lost:"))
	redisstore.SetReservationTTL(f.Engine(holder), time.Minute)
	// The killed connection may be that of a waiter's look at the lock
	// (a script too, held back as well): then try again.
	for try := range 5 {
		resource := fmt.Sprintf("r%d", try)
		if lostClaimTry(t, ctx, srv, holder, s, resource) {
			return
		}
	}
	t.Fatal("every try killed a waiter's look rather than the claim")
}

// lostClaimTry runs testLostClaimReplyIsClaimedAgain on resource, and
// reports false if it killed the connection of a waiter's look rather
// than the claim's.
func lostClaimTry(t *testing.T, ctx context.Context, srv *redistest.Server, holder, s Store, resource string) bool {
	key := "lost:{" + resource + "}"
	if err := holder.Acquire(ctx, resource, "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	wait := func() <-chan error {
		done := make(chan error, 1)
		go func() { done <- s.WaitRelease(ctx, resource) }()
		return done
	}
	// One caller to be woken, one to keep the process's subscription.
	first := wait()
	waitersInLine(t, srv, key, 1)
	keeper := wait()
	waitersInLine(t, srv, key, 2)
	if err := holder.Release(ctx, resource, "h"); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-first:
	case err = <-keeper:
		keeper = first
	case <-ctx.Done():
		t.Fatal("nobody woken by the release")
	}
	if err != nil {
		t.Fatalf("the woken caller's WaitRelease(%s) = %v; want nil", resource, err)
	}

	// The woken caller's acquisition sends the claim; the server holds
	// it back, and its connection is killed.
	if err := srv.Do("CLIENT", "PAUSE", "30000", "WRITE").Error(); err != nil {
		t.Fatal(err)
	}
	unpause := func() {
		if err := srv.Do("CLIENT", "UNPAUSE").Error(); err != nil {
			t.Fatal(err)
		}
	}
	lost := make(chan error, 1)
	go func() { lost <- s.Acquire(ctx, resource, "a", time.Minute) }()
	var blocked string
	eventually(t, "a script held back", func() bool {
		blocked = heldBackScript(t, srv)
		return blocked != ""
	})
	if strings.Contains(blocked, " ssub=1 ") {
		unpause()
		t.Skip("the claim's connection carries the process's subscription: killing it ends the subscription")
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(blocked, "id="), " ")
	if err := srv.Do("CLIENT", "KILL", "ID", id).Error(); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-lost:
	case err = <-keeper:
		t.Logf("the killed connection held a waiter's look (it returned %v): trying again", err)
		unpause()
		<-lost
		return false
	case <-ctx.Done():
		t.Fatal("the acquisition did not return when its connection was killed")
	}
	unpause()
	if err == nil || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire(%s, a) whose connection was killed before the server ran it = %v; want a connection error", resource, err)
	}
	if v, err := srv.Do("GET", key).ToString(); err != nil || !strings.HasPrefix(v, redisstore.ReservationPrefix) {
		t.Fatalf("the lock after the lost claim holds %q, %v; want the reservation", v, err)
	}

	if err := s.Acquire(ctx, resource, "b", time.Minute); err != nil {
		got, _ := srv.Do("GET", key).ToString()
		t.Fatalf("Acquire(%s, b) after the reply to the process's claim was lost = %v (the lock holds %q); want nil: the lock is reserved for the process", resource, err, got)
	}
	if err := s.Release(ctx, resource, "b"); err != nil {
		t.Fatal(err)
	}
	if err := <-keeper; err != nil {
		t.Fatalf("the keeper's WaitRelease(%s) = %v; want nil", resource, err)
	}
	if err := s.Acquire(ctx, resource, "c", time.Minute); err != nil {
		t.Fatalf("the keeper's Acquire(%s, c) after its wake = %v; want nil", resource, err)
	}
	if err := s.Release(ctx, resource, "c"); err != nil {
		t.Fatal(err)
	}
	noSubscriptionsLeft(t, srv, key)
	return true
}

// heldBackScript returns the CLIENT LIST line of a client whose script
// the server holds back (blocked by CLIENT PAUSE), or "".
func heldBackScript(t *testing.T, srv *redistest.Server) string {
	t.Helper()
	list, err := srv.Do("CLIENT", "LIST").ToString()
	if err != nil {
		t.Fatalf("CLIENT LIST = %v", err)
	}
	for _, line := range strings.Split(list, "\n") {
		fields := strings.Fields(line)
		for _, field := range fields {
			if flags, ok := strings.CutPrefix(field, "flags="); ok && strings.Contains(flags, "b") && strings.Contains(line, " cmd=evalsha ") {
				return line
			}
		}
	}
	return ""
}
