package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// WaitRelease implements [lock.Waiter]. It subscribes (SSUBSCRIBE, on the
// node that holds the lock) to a shard channel of its own, then gets in
// line on the server: one script reads the lock's PTTL and, if the lock
// is held, appends the subscription to the resource's waiters' queue. If
// the resource is free it returns nil at once; otherwise it blocks until
// a Release wakes it, the lock's TTL runs out (it then looks again, as
// the lock may have been extended), or ctx ends. Getting in line before
// looking means no release that happens after the call began is missed.
// A lock set to expire sooner than the TTL a waiter saw (extended for
// less, or taken again for less) is seen to expire a second late at most:
// waiters look again now and then (see firstRelook). So is a key with no
// TTL at the lock's name (set by another client, or by hand) seen to be
// deleted.
//
// A release wakes exactly one caller across every process: it pops the
// first subscription in line, reserves the lock for it unless the store
// uses the restart guard or WithWaitReplicas (see ReservationPrefix: no
// other caller can take it meanwhile) and publishes
// on that subscription's channel alone, so waiters take turns in the
// order they got in line and nobody else hears of it. Callers of one process waiting for the same resource
// share one subscription, which wakes them longest-waiting first. A wake
// that finds no caller left is handed on to the next subscription in
// line. The subscription is dropped (out of the queue, unsubscribed) a
// moment after the last caller returns; nothing stays behind but entries
// of the queue, which expires a second after the lock would. Expiry wakes
// every caller, but the process's callers still take turns: one that
// finds the lock free while a caller that has waited longer is in line
// keeps its place and looks again, and the one whose turn it is comes
// back at the front should it lose the lock all the same.
//
// If the subscription breaks or ends (the connection is lost, the slot
// moves, or a queued acquisition of the process finds it off the lock's
// master and ends it), waiting callers get an error at once, never nil:
// the lock may still be held; the lockers then fall back to their retry
// delay. Sharded pub/sub needs Redis 7; on older servers
// WaitRelease returns an error matching errors.ErrUnsupported.
func (s *Store) WaitRelease(ctx context.Context, resource string) error {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return err
	}
	return s.wait(ctx, s.lockKey(resource), lockWait)
}

// waitFor is what a wait waits for: the release of a lock (WaitRelease)
// or of a permit (WaitPermit). Its scripts take KEYS key, waiters.
type waitFor struct {
	// look returns a first look at key, whose reply is -2 if it is free.
	look func(key string) Cmd
	// wait gets a subscription in line (ARGV: its id, queueMargin, "1"
	// to get in at the front, "1" to get in line behind a handoff, and
	// the number of its callers waiting, "0" or "r": see wait.lua) if key is
	// not free, and returns -2 if it is free, -3 if it is being handed
	// to a waiter ahead (look again after handoffGrace), or the
	// milliseconds after which to look again (-1: none).
	wait *Script
	// pass hands a wake no caller used to the next in line, if key is
	// free.
	pass *Script
	// reserved is whether a release that wakes a waiter reserves what it
	// released for the waiter's subscription (if the store reserves: see
	// ReservationPrefix), which the process's next acquisition claims.
	reserved bool
	// wrongType is the error of a key of another type at key, which
	// look and wait answer with WRONGTYPE.
	wrongType func(s *Store, key string) error
}

var lockWait = &waitFor{
	look:      func(key string) Cmd { return cmd1("PTTL", key) },
	wait:      waitScript,
	pass:      passScript,
	reserved:  true,
	wrongType: (*Store).wrongType,
}

// wait blocks until what waits for at key is free, is released or
// expires, or ctx ends: see WaitRelease.
func (s *Store) wait(ctx context.Context, key string, what *waitFor) error {
	if s.noShardedPubSub.Load() {
		return s.errNoShardedPubSub(nil)
	}
	t, err := hub.join(ctx, s, key, what)
	if err != nil {
		return err
	}
	defer hub.leave(t)

	// A first look while a new subscription is being made: a free
	// resource or a failing server is known at once. If held, look again
	// once subscribed, so that a release in between is not missed. (A
	// subscription that is already there needs no first look.)
	select {
	case <-t.ready:
	default:
		look := what.look(key)
		look.Queue = true
		switch r := s.run(ctx, look); {
		case r.serverErr("WRONGTYPE"):
			return what.wrongType(s, key)
		case r.Err != nil:
			return s.failed(ctx, r.Err)
		case r.Int == -2:
			return nil
		}
	}
	select {
	case <-t.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !t.subscribed.Load() {
		<-t.done
		if t.unsupported {
			s.noShardedPubSub.Store(true)
			return s.errNoShardedPubSub(t.err)
		}
		return t.ended() // never nil: the lock may still be held
	}

	var expiry *time.Timer
	defer func() {
		if expiry != nil {
			expiry.Stop()
		}
	}()
	front, behind, again := t.takeWoken(), true, false
	relook := firstRelook
	// In line before looking, here and on the server, so that a release
	// after the look wakes this caller. Looking again, it keeps its place
	// in both lines: in the server's (see wait.lua), and in the process's,
	// which it does not leave between looks (leaving and joining again
	// would put it behind the callers that came after it).
	w := t.line.Join(front)
	for {
		waiting := "0"
		switch {
		case again:
			waiting = strconv.Itoa(t.line.Len())
		case t.line.Len() == 1:
			waiting = "r" // alone: what the subscription has in line is stale
		}
		register := script(what.wait, []string{key, WaitersOf(key)}, t.id, queueMargin, flag(front), flag(behind), waiting)
		register.Queue = true
		waited := again // an earlier look found the lock held (or being handed on)
		front, again = false, true
		r := s.run(ctx, register)
		if r.Err != nil {
			t.line.Leave(w, true, t.handOn)
			if r.serverErr("WRONGTYPE") {
				return what.wrongType(s, key)
			}
			return s.failed(ctx, r.Err)
		}
		var expired <-chan time.Time
		ms := r.Int
		if ms == -2 && waited && !t.line.First(w) {
			// Free at a look again, but a caller of this process that
			// has waited longer is still in line (the lock expired,
			// which wakes every caller at its expiry: see relook): it
			// takes its turn first, as a release would have it, and this
			// caller keeps its place and looks again after the handoff's
			// grace, rather than race it for the lock.
			ms = -3
		}
		switch {
		case ms == -2: // free
			if !t.line.Leave(w, false, t.handOn) && waited {
				// Found free at a look after the lock's expiry (or after
				// a caller ahead took its turn), and not woken: this
				// caller's turn, as if a release had woken it. Should it
				// lose the lock to a caller that did not wait in line, it
				// gets back in at the front, as a woken caller does (see
				// takeWoken).
				t.woken.Add(1)
			}
			return nil
		case ms >= 0 || ms == -1 || ms == -3: // held (-1: with no TTL), or being handed to a waiter ahead
			// Wake when its TTL runs out, or the handoff's grace, at the
			// latest; and look again before, now and then, in case the
			// lock now expires sooner (see relook). A key with no TTL
			// (not a lock this store took) has only the relooks:
			// nothing announces its deletion.
			d := time.Duration(ms+1) * time.Millisecond
			switch {
			case ms == -3:
				d, behind = handoffGrace, false
			case ms == -1 || d > relook:
				d, relook = relook, min(2*relook, maxRelook)
			}
			if expiry == nil {
				expiry = time.NewTimer(d)
			} else {
				expiry.Reset(d)
			}
			expired = expiry.C
		}
		select {
		case <-w.C:
			return nil
		case <-t.done:
			select {
			case <-w.C: // a release woke this caller as the subscription ended
				return nil
			default:
			}
			// Ended without a release (broken, or ended by the process
			// with no error of its own: see AcquireQueued): never a
			// release, as the lock may still be held.
			return t.ended()
		case <-ctx.Done():
			t.line.Leave(w, true, t.handOn)
			return ctx.Err()
		case <-expired:
			// Expired, or extended meanwhile: look again, in line still
			// (unless a release woke this caller meanwhile).
			select {
			case <-w.C:
				return nil
			default:
			}
		}
	}
}

// A waiter looks at the lock again firstRelook after it got in line, then
// after twice as long each time, up to maxRelook, however long the TTL it
// saw: nothing tells it when the lock is set to expire sooner (extended
// to a shorter TTL, or taken again for a shorter one by the next holder),
// so it sees such an expiry at most the time it has waited so far, and
// at most maxRelook, late. A key without a TTL, which nothing may free
// with a release, is looked at on the same schedule. Looking again keeps
// its place in line.
const (
	firstRelook = 50 * time.Millisecond
	maxRelook   = time.Second
)

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// handoffGrace is how long a waiter that found the lock free, with
// waiters ahead of it in line, waits for the lock to be handed to the
// first of them (woken by its release) before it looks again and, if it
// is still free, returns: the line may hold only waiters that went away.
// It keeps the callers that did not win the lock, and come back to wait,
// from taking it from the waiter whose turn it is.
const handoffGrace = 10 * time.Millisecond

func (s *Store) errNoShardedPubSub(cause error) error {
	err := fmt.Errorf("%s: the server has no sharded pub/sub (Redis 7 or later), so waits cannot be notified of releases: %w", s.kind, errors.ErrUnsupported)
	if cause != nil {
		err = fmt.Errorf("%w (%w)", err, cause)
	}
	return err
}

// ErrSubscriptionEnded is what Client.Subscribe returns when the server
// ends a subscription (the slot moved, say).
var ErrSubscriptionEnded = errors.New("subscription to releases ended by the server (the slot moved?)")
