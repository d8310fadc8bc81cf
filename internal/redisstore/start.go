package redisstore

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock"
)

// Start implements [lock.Starter], so that a lock.MultiLocker over several
// Redis stores asks them all at once without a goroutine per store per
// call. Calls started by any number of goroutines are queued; a goroutine
// of the store's takes every call waiting, sends them together with one
// Client.DoMulti (one write, one wake-up for all the answers), and calls
// each call's done. It then takes the calls that queued meanwhile, and
// ends when none are left, so it runs only while there are calls to send:
// under load one goroutine per store (a few: see Batcher) serves every caller,
// and an idle store has none.
//
// Every call is answered by its own context: a call whose context ends
// before its answer arrives is answered then with the context's error (an
// unknown outcome, never a lock outcome), whatever the other calls of its
// batch wait for; a call whose context ended before it was sent is not
// sent. The commands and outcomes are those of the blocking methods,
// NOSCRIPT handling included; an outcome that needs one more round trip
// (a refusal to tell from a key of another type, a fence counter to lift)
// gets it off the sending goroutine. With WithWaitReplicas, whose
// acquisitions need a connection of their own, each acquisition runs in a
// goroutine of its own.
func (s *Store) Start(ctx context.Context, c lock.Call, done func(uint64, error)) {
	sc := &startedCall{ctx: ctx, call: c, done: done}
	if err := s.checkCall(ctx, c); err != nil {
		done(0, err)
		return
	}
	switch c.Op {
	case lock.CallAcquire, lock.CallAcquireFenced, lock.CallRelease, lock.CallExtend, lock.CallRaiseFence:
	default:
		done(c.Run(ctx, s))
		return
	}
	if s.replicas > 0 && (c.Op == lock.CallAcquire || c.Op == lock.CallAcquireFenced) {
		go func() { done(c.Run(ctx, s)) }()
		return
	}
	sc.key = s.lockKey(c.Resource)
	sc.n = s.commands(sc)
	// Answered by its deadline, or its cancellation, whatever the batch.
	sc.stop = context.AfterFunc(ctx, func() { sc.answerOnce(0, ctx.Err()) })
	s.enqueue(sc)
}

// enqueue queues sc for the store's sending goroutines, starting one if
// fewer than s.maxSenders run.
func (s *Store) enqueue(sc *startedCall) {
	p := &s.pipe
	p.mu.Lock()
	p.queue = append(p.queue, sc)
	more := p.senders < s.maxSenders
	if more {
		p.senders++
	}
	p.mu.Unlock()
	if more {
		go s.sendQueued()
	}
}

// Batcher is an optional interface of a Client: MaxBatches bounds the
// batches of started calls a store has in flight at once (default 1). A
// client that multiplexes callers on its connections (rueidis) sends the
// most together with one batch at a time; one that gives each pipeline a
// connection of its own and waits for all its answers (go-redis) needs a
// few, so that a slow batch does not hold up the calls queued behind it.
type Batcher interface {
	MaxBatches() int
}

// NilAverse is an optional interface of a Client: if NilAverse returns
// true, the store takes locks with SET NX PX without GET, so that an
// acquisition that succeeds is answered OK rather than nil, and reads a
// refusal with GET afterwards (one more round trip, on the refusal path
// only). go-redis turns every nil reply into an error that it then
// examines as a possible cause to retry, at about twenty allocations.
type NilAverse interface {
	NilAverse() bool
}

// checkCall validates a started call's arguments, as the blocking method
// would.
func (s *Store) checkCall(ctx context.Context, c lock.Call) error {
	switch c.Op {
	case lock.CallRelease:
		return s.check(ctx, c.Resource, c.Token, 1)
	case lock.CallRaiseFence:
		return s.checkRaise(ctx, c.Resource, c.Fence)
	}
	return s.check(ctx, c.Resource, c.Token, c.TTL)
}

// pipeline is the queue of the calls started with Start.
type pipeline struct {
	mu      sync.Mutex
	queue   []*startedCall
	senders int            // goroutines sending the queue
	spare   []*startedCall // a buffer for the next batch
}

// startedCall is a call queued by Start. It keeps the caller's context,
// for its deadline and to tell its outcome, until the call is answered.
type startedCall struct {
	ctx      context.Context
	call     lock.Call
	key      string
	cmds     [3]Cmd
	n        int // commands in cmds
	replies  [3]Reply
	shared   bool // its INCR goes out as a share of its batch's INCRBY: see batchCmds
	done     func(uint64, error)
	stop     func() bool // stops the context's watch
	answered atomic.Bool
}

// answer calls done, if nobody has, and stops watching the context.
func (sc *startedCall) answer(fence uint64, err error) {
	stop := sc.stop // read first: once answered, sc may be reused (see sharedCall)
	if sc.answerOnce(fence, err) {
		stop()
	}
}

// answerOnce calls done if nobody has, and reports whether it did.
func (sc *startedCall) answerOnce(fence uint64, err error) bool {
	if !sc.answered.CompareAndSwap(false, true) {
		return false
	}
	sc.done(fence, err)
	return true
}

// commands writes the commands of sc into sc.cmds and returns how many.
func (s *Store) commands(sc *startedCall) int {
	c := sc.call
	switch c.Op {
	case lock.CallAcquire:
		if s.guard > 0 {
			sc.cmds[0] = s.guardedCmd(false, sc.key, c.Token, c.TTL)
		} else {
			sc.cmds[0] = s.setNX(sc.key, c.Token, c.TTL)
		}
	case lock.CallAcquireFenced:
		if s.guard > 0 {
			sc.cmds[0] = s.guardedCmd(true, sc.key, c.Token, c.TTL)
			return 1
		}
		return s.fencedCmds(&sc.cmds, false, sc.key, c.Token, c.TTL)
	case lock.CallRelease:
		sc.cmds[0] = script(releaseScript, []string{sc.key, WaitersOf(sc.key), s.counterKey(sc.key)}, c.Token) // no reservation: see reserves
	case lock.CallExtend:
		sc.cmds[0] = script(extendScript, []string{sc.key}, c.Token, s.ttlArg(c.TTL))
	case lock.CallRaiseFence:
		sc.cmds[0] = script(raiseScript, []string{s.counterKey(sc.key)}, strconv.FormatUint(c.Fence, 10))
	}
	return 1
}

// sendQueued sends the queued calls, batch after batch, until none are
// left; up to s.maxSenders goroutines do so at once.
func (s *Store) sendQueued() {
	presize(0)
	p := &s.pipe
	p.mu.Lock()
	batch := p.spare
	p.spare = nil
	for {
		batch, p.queue = p.queue, batch[:0]
		if len(batch) == 0 {
			p.spare = batch
			p.senders--
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		waitAt(&s.batchGate)
		s.send(batch)
		clear(batch) // let go of the contexts and callbacks
		p.mu.Lock()
	}
}

// send sends one batch and answers every call.
func (s *Store) send(batch []*startedCall) {
	// The batch lasts until the last deadline of its calls, or without a
	// deadline if one has none: each call is answered by its own context
	// anyway (see Start), and a batch cut short by another caller's
	// deadline would fail calls that still had time.
	var deadline time.Time
	noDeadline := false
	live := batch[:0] // the calls to send, compacted in place
	for _, sc := range batch {
		if sc.answered.Load() || sc.ctx.Err() != nil {
			s.notSent(sc)
			continue
		}
		if d, ok := sc.ctx.Deadline(); !ok {
			noDeadline = true
		} else if d.After(deadline) {
			deadline = d
		}
		live = append(live, sc)
	}
	if len(live) == 0 {
		return
	}
	ctx := context.Background()
	if !noDeadline {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	// A new slice for every batch: when the deadline passes first, the
	// client may still hold the commands until it has written them.
	cmds, shares := s.batchCmds(live)
	replies := make([]Reply, len(cmds))
	s.client.DoMulti(ctx, cmds, replies, false)
	round := s.resend(ctx, cmds, replies, shares)
	shares.scatter(live, replies, round)
	for _, sc := range live {
		if sc.answered.Load() {
			continue // answered by its context
		}
		r := sc.replies[:sc.n]
		if s.needsMore(sc, r) {
			go func() { sc.answer(s.outcome(sc, r)) }()
			continue
		}
		sc.answer(s.outcome(sc, r))
	}
}

// notSent answers sc, a call of a batch whose context ended before it
// was sent, with its context's error: it had no effect, so a claim of a
// reservation in it (see acquireShared) is given back, unless its caller
// answered it first (and gave it back).
func (s *Store) notSent(sc *startedCall) {
	first, stop := sc.cmds[0], sc.stop // read first: once answered, sc may be reused
	if sc.answerOnce(0, sc.ctx.Err()) {
		stop()
		s.unclaimed(&first)
	}
}

// HoldBatches makes s hold each batch of started calls (and of shared
// acquisitions: see ShareBatches) before sending it, until resume is
// called, for tests that end a call's context before its batch goes out;
// reached is closed once a batch is held.
func HoldBatches(s *Store) (reached <-chan struct{}, resume func()) {
	return newHold(&s.batchGate)
}

// resend sends again the commands of a batch that the server answered
// NOSCRIPT (in full) or that never left (see Client.NotSent), up to
// maxResends times, and returns in which round each command was last
// sent (nil if none was sent again). A fenced acquisition is not sent
// again for NOSCRIPT: see fenceShares.fenceFollows.
func (s *Store) resend(ctx context.Context, cmds []Cmd, replies []Reply, shares fenceShares) []uint8 {
	var round []uint8
	for n := range maxResends {
		var again []int
		for i := range replies {
			r := &replies[i]
			if (r.noScript() && !shares.fenceFollows(i)) || (r.Err != nil && s.client.NotSent(ctx, r.Err)) {
				cmds[i].Full = cmds[i].Full || r.noScript()
				again = append(again, i)
			}
		}
		if again == nil {
			break
		}
		if round == nil {
			round = make([]uint8, len(cmds))
		}
		resend := make([]Cmd, len(again))
		for j, i := range again {
			resend[j] = cmds[i]
			round[i] = uint8(n + 1)
		}
		answers := make([]Reply, len(resend))
		s.client.DoMulti(ctx, resend, answers, false)
		for j, r := range answers {
			replies[again[j]] = r
		}
	}
	return round
}

// needsMore reports whether the outcome of sc needs another round trip:
// a refused acquisition (to tell a lock from a key of another type), a
// fenced one whose counter is to be lifted.
func (s *Store) needsMore(sc *startedCall, r []Reply) bool {
	slowRefusal := sc.cmds[0].NArgs != 5 && r[0].Nil // a SET NX without GET: see refused
	if s.guard > 0 && (sc.call.Op == lock.CallAcquire || sc.call.Op == lock.CallAcquireFenced) {
		return r[0].Int == 0 && r[0].Resent // see guarded
	}
	switch sc.call.Op {
	case lock.CallAcquire:
		return slowRefusal || r[0].Err != nil
	case lock.CallAcquireFenced:
		switch {
		case slowRefusal || r[0].Err != nil || r[1].Err != nil:
			return true
		case sc.cmds[1].Script != nil: // lifted by the script
			return false
		case len(r) == 3 && r[2].Err != nil:
			return true
		}
		return s.behind(r, sc.call.TTL)
	}
	return false
}

// outcome turns the answer to a started call into what the blocking
// method would have returned.
func (s *Store) outcome(sc *startedCall, r []Reply) (uint64, error) {
	ctx, c := sc.ctx, sc.call
	switch c.Op {
	case lock.CallAcquire:
		if s.guard > 0 {
			return s.guarded(ctx, false, sc.key, c.Token, r[0])
		}
		if err := s.acquired(ctx, &sc.cmds[0], r[0]); err != errNoSetGet {
			return 0, err
		}
		return c.Run(ctx, s) // again without GET
	case lock.CallAcquireFenced:
		if s.guard > 0 {
			return s.guarded(ctx, true, sc.key, c.Token, r[0])
		}
		fence, err := s.fenced(ctx, sc.cmds[:len(r)], c.TTL, r)
		if err == errNoSetGet {
			return c.Run(ctx, s) // again without GET
		}
		return fence, err
	case lock.CallRelease:
		return 0, s.released(ctx, sc.key, time.Time{}, r[0])
	case lock.CallExtend:
		return 0, s.extended(ctx, r[0])
	}
	if r[0].Err != nil { // lock.CallRaiseFence
		return 0, s.failed(ctx, r[0].Err)
	}
	return 0, nil
}

// presize grows the calling goroutine's stack at once to what a batch
// needs, while the stack is one frame deep: grown on the way by the
// client's calls, it is copied several times, each time with every frame
// of a deep call.
//
//go:noinline
func presize(i int) byte {
	var pad [6 << 10]byte
	pad[i] = 1
	return pad[i/2]
}
