package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockkit/lock"
)

// AcquireQueued implements [lock.Queuer]. It takes the lock if it is free
// (nobody waits for it), and otherwise puts the acquisition in the lock's
// waiters' queue — after the process has subscribed to releases, as
// WaitRelease does — in one round trip: commands (see queued.enter), or
// through a NilAverse client a script (queue.lua). A release then grants
// the lock to the first acquisition in line (grant.lua): it sets the lock
// to that acquisition's token for its TTL, takes its fence, and publishes
// both on the channel of its process's subscription, which hands them to
// the waiting call. So a handoff costs the release alone — the waiter
// holds the lock when it hears of it, without a round trip of its own —
// and nobody who asks later can take the lock first: acquisitions are
// served in the order they got in line, across processes.
//
// While the process has no subscription to the lock's releases (nobody
// of the process waited for it lately), the call first makes an
// acquisition as Acquire or AcquireFenced does, and only one that finds
// the lock held subscribes and gets in line: an uncontended lock costs
// what it costs through them.
//
// A grant published to a process none of whose callers waits for it any
// more (its call ended) is released by the process, which hands the lock
// to the next in line; one for a subscription that is gone, or not on the
// server (after a failover), is not made: the release tries the next in
// line. A lock that expires instead of being released is taken by the
// first in line when its waiters look again (at its expiry, and now and
// then: see firstRelook).
//
// The fence of a granted lock is taken by the script that grants it, after
// the previous holder released: fences increase as for AcquireFenced (see
// the package documentation on fencing), and the script lifts the counter
// to the server's clock when it is behind it.
//
// It needs sharded pub/sub (Redis 7), and the store must not use the
// restart guard or WithWaitReplicas, whose acquisitions check more than a
// grant could: otherwise it returns an error matching
// errors.ErrUnsupported, and the lockers wait with WaitRelease instead.
func (s *Store) AcquireQueued(ctx context.Context, a lock.QueuedAcquisition) (uint64, error) {
	if err := s.check(ctx, a.Resource, a.Token, a.TTL); err != nil {
		return 0, err
	}
	if !s.reserves() {
		return 0, fmt.Errorf("%s: a store with the restart guard or WithWaitReplicas does not queue acquisitions: %w", s.kind, errors.ErrUnsupported)
	}
	if s.noShardedPubSub.Load() {
		return 0, s.errNoShardedPubSub(nil)
	}
	key := s.lockKey(a.Resource)
	var t *topic // the process's subscription, if it waited for the lock lately
	if a.Wait > 0 {
		t = hub.joinLive(s, key)
	}
	if t == nil {
		var fence uint64
		var err error
		if a.Fenced {
			fence, err = s.AcquireFenced(ctx, a.Resource, a.Token, a.TTL)
		} else {
			err = s.Acquire(ctx, a.Resource, a.Token, a.TTL)
		}
		if a.Wait <= 0 || !errors.Is(err, lock.ErrNotAcquired) {
			return fence, err
		}
		// Queued is called once in line, below: a call that begins once
		// this one called it must get in line behind it.
	}
	s.loadExtend(ctx, key)
	deadline := time.Now().Add(a.Wait)
	for renewals := 0; ; renewals++ {
		if t == nil {
			var err error
			if t, err = hub.join(ctx, s, key, lockWait); err != nil {
				return 0, err
			}
		}
		fence, err := s.queue(ctx, t, key, &a, deadline)
		hub.leave(t)
		if err != errElsewhere || renewals == maxRenewals {
			return fence, err
		}
		// The subscription is not on the lock's master (a failover moved
		// the slot, say): end it, so that the next one is made there.
		hub.end(t)
		t = nil
	}
}

// loadExtend makes sure, once per store, that the node of the lock at key
// knows the extend script: a lock handed over after a long wait is
// extended at once by the lockers (lock.Queuer), and by then the lock has
// lost the handoff's way to the waiter already — on a slow link an
// EVALSHA answered NOSCRIPT, and sent again in full, could reach the
// server after the lock expired. It runs the script in full with a token
// no lock holds, which changes nothing.
func (s *Store) loadExtend(ctx context.Context, key string) {
	if s.extendLoaded.Load() {
		return
	}
	load := script(extendScript, []string{key}, "", "1")
	load.Full = true
	if r := s.do(ctx, load); r.Err == nil {
		s.extendLoaded.Store(true)
	}
}

// maxRenewals bounds how many times a queued acquisition makes a new
// subscription because its last was not on the lock's master.
const maxRenewals = 2

// errElsewhere is the error of a queued acquisition whose subscription is
// not on the lock's master: it would never be granted the lock.
var errElsewhere = errors.New("the subscription to releases is not on the lock's master (after a failover?)")

// queue makes the queued acquisition a of the lock at key through the
// subscription t, waiting until deadline at the latest.
func (s *Store) queue(ctx context.Context, t *topic, key string, a *lock.QueuedAcquisition, deadline time.Time) (uint64, error) {
	select {
	case <-t.ready:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if !t.subscribed.Load() {
		<-t.done
		if t.unsupported {
			s.noShardedPubSub.Store(true)
			return 0, s.errNoShardedPubSub(t.err)
		}
		return 0, t.ended()
	}
	q := queued{s: s, t: t, key: key, token: a.Token, ttl: a.TTL, fenced: a.Fenced, entry: t.id + ":" + s.ttlArg(a.TTL) + ":" + flag(a.Fenced) + ":" + a.Token, queued: &a.Queued}
	q.slot = t.expect(a.Token)
	return q.run(ctx, deadline)
}

// queued is one call of AcquireQueued, once its process has subscribed.
type queued struct {
	s      *Store
	t      *topic
	key    string
	token  string
	ttl    time.Duration
	fenced bool
	entry  string // in the waiters' queue: see grant.lua
	slot   *grantSlot
	// queued is the acquisition's Queued, to call when it gets in line;
	// set to nil once called.
	queued *func()
}

// errGrantLost is the error of a queued acquisition whose lock was
// granted while its subscription was being renewed: the grant's message,
// and with it the fence, may be lost. The lock may be held under the
// token; the lockers release it.
var errGrantLost = errors.New("the lock was handed to the queued acquisition while its subscription to releases was renewed, and the message of the handoff may be lost")

// run gets q in line and waits for its grant, looking again at the lock
// when it may have expired, until deadline.
func (q *queued) run(ctx context.Context, deadline time.Time) (uint64, error) {
	var timer *time.Timer // the next look, or the deadline
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	first, relook, renewed := true, firstRelook, false
	for {
		var r Reply
		if first && !q.s.noSetGet.Load() {
			fence, taken, entered, err := q.enter(ctx)
			if taken || err != nil {
				return fence, err
			}
			r = entered
		} else {
			r = q.s.run(ctx, q.cmd(first))
		}
		first = false
		switch {
		case r.Err != nil:
			q.abandon()
			if r.serverErr("WRONGTYPE") {
				return 0, q.s.wrongType(q.key)
			}
			return 0, q.s.failed(ctx, r.Err)
		case r.Str != "": // taken now
			q.t.forget(q.token, q.slot)
			return q.s.fenceOf(r.Str)
		case r.Int == -4 && renewed:
			q.abandon()
			return 0, fmt.Errorf("%s: %w", q.s.kind, errGrantLost)
		case r.Int == -5: // out of line
			q.t.forget(q.token, q.slot)
			return 0, errElsewhere
		}
		if f := *q.queued; f != nil {
			*q.queued = nil
			f()
		}
		// Wait for the grant; look again when the lock may have expired
		// (-3: handed to a waiter ahead; -4: granted, no expiry to wait
		// for) and now and then meanwhile (see firstRelook); leave at the
		// deadline.
		var d time.Duration
		switch ms := r.Int; {
		case ms == -3:
			d = handoffGrace
		case ms >= 0:
			d = time.Duration(ms+1) * time.Millisecond
		}
		if ms := r.Int; ms == -1 || d > relook {
			d, relook = relook, min(2*relook, maxRelook)
		}
		left := time.Until(deadline)
		if r.Int == -4 || d > left {
			d = left
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-q.slot.c:
			return q.slot.fence, nil
		case <-timer.C:
			if !time.Now().Before(deadline) {
				return q.leave(ctx)
			}
		case <-q.slot.renewed:
			select {
			case <-q.slot.c:
				return q.slot.fence, nil
			default:
				renewed = true // a grant may have been lost: look again
			}
		case <-ctx.Done():
			q.abandon()
			return 0, ctx.Err()
		case <-q.t.done:
			q.abandon()
			return 0, q.t.ended()
		}
	}
}

// enter gets q in line with commands, in one round trip, where the queue
// script would cost the server about twice as much (a script's call alone
// costs about what the commands do, and waiters get in line once per
// handoff):
//
//	RPUSH waiters entry           in line
//	PEXPIRE waiters keep NX       the queue lives the TTL and the margin,
//	PEXPIRE waiters keep GT       or as long as it did if longer
//	SET lock token NX PX ttl GET
//	PTTL lock
//
// The commands are not atomic, and need not be: if the SET takes the lock
// (it was free), q holds it, and its entry is taken out of line, and its
// fence taken (see fencedCmds: after the SET, before q can release), in
// one more round trip before it returns; if the SET finds q's own token,
// a release granted the lock to q in between, and its message is on its
// way (-4, as the script answers); if another's, q is in line, and waits
// as long as the PTTL says. A lock that expired with waiters in line may
// so be taken by q before them, where the script would hand it to the
// first in line. It returns taken (with the fence and the error of the
// acquisition) when it is done, and otherwise the reply to wait on, as
// the queue script answers.
func (q *queued) enter(ctx context.Context) (fence uint64, taken bool, r Reply, err error) {
	s := q.s
	b := enterBatches.Get().(*enterBatch)
	defer enterBatches.Put(b)
	waiters := WaitersOf(q.key)
	keep := itoa(queueMarginMs + Millis(q.ttl))
	b.cmds[0] = cmd1("RPUSH", waiters, q.entry)
	b.cmds[1] = cmd1("PEXPIRE", waiters, keep, "NX")
	b.cmds[2] = cmd1("PEXPIRE", waiters, keep, "GT")
	b.cmds[3] = s.setNX(q.key, q.token, q.ttl)
	b.cmds[4] = cmd1("PTTL", q.key)
	s.client.DoMulti(ctx, b.cmds[:5], b.replies[:5], false)
	for _, x := range b.replies[:3] {
		if x.Err != nil {
			q.abandon()
			return 0, true, Reply{}, s.failed(ctx, x.Err)
		}
	}
	switch set := b.replies[3]; {
	case set.serverErr("WRONGTYPE"):
		q.abandon()
		return 0, true, Reply{}, s.wrongType(q.key)
	case set.Err != nil:
		q.abandon()
		return 0, true, Reply{}, s.failed(ctx, set.Err)
	case set.Nil || set.Resent && set.Str == q.token:
		fence, err := q.entered(ctx, b)
		return fence, true, Reply{}, err
	case set.Str == q.token:
		return 0, false, Reply{Int: -4}, nil // granted in between
	}
	return 0, false, b.replies[4], nil
}

// entered completes an enter whose SET took the lock: q's entry is taken
// out of line before anyone can release the lock (only q can; its release
// would grant the entry the lock again — an entry a failure leaves behind
// is granted, and released by the process, when q releases: see
// topic.granted), and its fence is taken, in one round trip.
func (q *queued) entered(ctx context.Context, b *enterBatch) (uint64, error) {
	s := q.s
	q.t.forget(q.token, q.slot)
	set, setReply := b.cmds[3], b.replies[3]
	leave := cmd1("LREM", WaitersOf(q.key), "1", q.entry)
	if !q.fenced {
		_ = s.do(ctx, leave)
		return 0, s.acquired(ctx, &set, setReply)
	}
	// The acquisition's commands as fenced takes them, at 3: the SET (sent
	// already) and those of the fence; sent now, at 0: LREM and the
	// fence's.
	k := s.fencedCmds((*[3]Cmd)(b.cmds[3:6]), false, q.key, q.token, q.ttl)
	b.cmds[0] = leave
	copy(b.cmds[1:k], b.cmds[4:3+k])
	s.client.DoMulti(ctx, b.cmds[:k], b.replies[:k], false)
	b.cmds[3], b.replies[3] = set, setReply
	copy(b.replies[4:3+k], b.replies[1:k])
	return s.fenced(ctx, b.cmds[3:3+k], q.ttl, b.replies[3:3+k])
}

// EntersWithCommands reports whether s's queued acquisitions get in line
// with commands (see queued.enter) rather than the queue script: not
// through a NilAverse client, to which the SET NX of a refused entry
// answers nil, an error it examines at length. For tests.
func EntersWithCommands(s *Store) bool { return !s.noSetGet.Load() }

// enterBatch holds enter's commands and replies, pooled as batch is.
type enterBatch struct {
	cmds    [7]Cmd
	replies [7]Reply
}

var enterBatches = sync.Pool{New: func() any { return new(enterBatch) }}

// cmd returns the queue script for q: first, to get in line; otherwise
// to look again.
func (q *queued) cmd(first bool) Cmd {
	return script(queueScript, []string{q.key, WaitersOf(q.key), q.s.counterKey(q.key)}, q.entry, flag(first), queueMargin, ReservationPrefix, q.s.reservationArg)
}

// leave takes q out of line once its wait is over, and returns
// lock.ErrNotAcquired; or, if its entry has left the line already, the
// lock granted to it meanwhile.
func (q *queued) leave(ctx context.Context) (uint64, error) {
	r := q.s.do(ctx, cmd1("LREM", WaitersOf(q.key), "1", q.entry))
	switch {
	case r.Err != nil:
		q.abandon()
		return 0, q.s.failed(ctx, r.Err)
	case r.Int == 1:
		if q.t.forget(q.token, q.slot) {
			go q.t.returnGrant(q.token) // cannot happen: it was in line
		}
		return 0, lock.ErrNotAcquired
	}
	// Out of line, not by this call: popped by a release, which set the
	// lock to q's token (granted: its message is on its way, or lost if
	// the subscription was renewed meanwhile), or the line was deleted
	// (FLUSHDB, a DEL by hand), and then no handoff comes: a lock that
	// does not hold q's token was not granted to q.
	select {
	case <-q.slot.c:
		return q.slot.fence, nil
	default:
	}
	switch g := q.s.do(ctx, cmd1("GET", q.key)); {
	case g.Err != nil && !g.serverErr("WRONGTYPE"):
		q.abandon()
		return 0, q.s.failed(ctx, g.Err)
	case g.Nil || g.Str != q.token:
		if q.t.forget(q.token, q.slot) {
			go q.t.returnGrant(q.token) // granted, and expired already
		}
		return 0, lock.ErrNotAcquired
	}
	select {
	case <-q.slot.c:
		return q.slot.fence, nil
	case <-q.slot.renewed:
		q.abandon()
		return 0, fmt.Errorf("%s: %w", q.s.kind, errGrantLost)
	case <-ctx.Done():
		q.abandon()
		return 0, ctx.Err()
	case <-q.t.done:
		q.abandon()
		return 0, q.t.ended()
	}
}

// abandon gives up q's place: its entry is taken out of line in the
// background, and a grant that comes anyway is released (see
// topic.granted), so that the lock goes on to the next in line.
func (q *queued) abandon() {
	if q.t.forget(q.token, q.slot) {
		go q.t.returnGrant(q.token)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
		defer cancel()
		_ = q.s.do(ctx, cmd1("LREM", WaitersOf(q.key), "1", q.entry))
	}()
}

// fenceOf returns the fence a queue script answered ("0": unfenced).
func (s *Store) fenceOf(v string) (uint64, error) {
	f, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: the queue script answered %q, not a fence", s.kind, v)
	}
	return f, nil
}

// grantSlot is where a queued acquisition waits for its grant.
type grantSlot struct {
	c       chan struct{} // closed when the grant has come
	fence   uint64        // the grant's fence, set before c is closed
	renewed chan struct{} // signalled when the subscription was confirmed again: a grant may have been lost
}

// expect registers a queued acquisition of token, before it gets in line.
func (t *topic) expect(token string) *grantSlot {
	g := &grantSlot{c: make(chan struct{}), renewed: make(chan struct{}, 1)}
	t.grantMu.Lock()
	if t.grants == nil {
		t.grants = make(map[string]*grantSlot)
	}
	t.grants[token] = g
	t.grantMu.Unlock()
	return g
}

// forget takes the acquisition of token out of t, and reports whether
// its grant had come.
func (t *topic) forget(token string, g *grantSlot) bool {
	t.grantMu.Lock()
	if t.grants[token] == g {
		delete(t.grants, token)
	}
	t.grantMu.Unlock()
	select {
	case <-g.c:
		return true
	default:
		return false
	}
}

// granted hands a grant, published as "fence:token", to the acquisition
// of token; if none waits for it (its call ended), the lock is released,
// and so handed to the next in line. It runs on the subscription's
// goroutine and does not block.
func (t *topic) granted(payload string) {
	f, token, ok := strings.Cut(payload, ":")
	fence, err := strconv.ParseUint(f, 10, 64)
	if !ok || err != nil {
		return // no grant of ours
	}
	t.grantMu.Lock()
	g := t.grants[token]
	if g != nil {
		delete(t.grants, token)
		g.fence = fence
		close(g.c)
	}
	t.grantMu.Unlock()
	if g == nil {
		go t.returnGrant(token)
	}
}

// ended returns why t ended, once done is closed: never nil, as a queued
// acquisition that sees it ended has no grant.
func (t *topic) ended() error {
	if t.err != nil {
		return t.err
	}
	return fmt.Errorf("%s: %w", t.store.kind, ErrSubscriptionEnded)
}

// lookAgain tells every queued acquisition of t that the subscription was
// confirmed again, and a grant may have been lost meanwhile.
func (t *topic) lookAgain() {
	t.grantMu.Lock()
	defer t.grantMu.Unlock()
	for _, g := range t.grants {
		select {
		case g.renewed <- struct{}{}:
		default:
		}
	}
}

// returnGrant releases a lock granted to token that nobody of the process
// takes, so that it goes on to the next in line.
func (t *topic) returnGrant(token string) {
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	_ = t.store.run(ctx, t.store.releaseCmd(t.key.lock, WaitersOf(t.key.lock), token))
}
