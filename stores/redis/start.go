package redis

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
)

// Start implements [lock.Starter], so that a lock.MultiLocker over several
// Redis stores asks them all at once without a goroutine per store per
// call. Calls started by any number of goroutines are queued; a goroutine
// of the store's takes every call waiting, sends them together with one
// DoMulti (rueidis writes them to the connection in one go, and wakes the
// sender once for all the answers), and calls each call's done. It then
// takes the calls that queued meanwhile, and ends when none are left, so
// it runs only while there are calls to send: under load one goroutine
// per store serves every caller, and an idle store has none.
//
// The commands and outcomes are those of Acquire (SET NX PX), Release and
// Extend, NOSCRIPT handling included. A batch is bounded by the earliest
// deadline among its calls' contexts; a call whose context ended before
// it was sent is not sent. With WithWaitReplicas, whose acquisitions need
// a dedicated connection, each call runs in a goroutine of its own.
func (s *Store) Start(ctx context.Context, c lock.Call, done func(uint64, error)) {
	token, ttl := c.Token, c.TTL
	switch c.Op {
	case lock.CallRelease:
		ttl = 1
	case lock.CallRaiseFence:
		token, ttl = "-", 1
	}
	if err := s.check(ctx, c.Resource, token, ttl); err != nil {
		done(0, err)
		return
	}
	if s.replicas > 0 || (s.guard > 0 && c.Op == lock.CallAcquire) || (c.Op != lock.CallAcquire && c.Op != lock.CallRelease && c.Op != lock.CallExtend) {
		go func() { done(c.Run(ctx, s)) }()
		return
	}
	sc := startedCall{ctx: ctx, call: c, done: done}
	if c.Op == lock.CallRelease {
		sc.key, sc.waiters = s.lockAndWaiters(c.Resource)
	} else {
		sc.key = s.lockKey(c.Resource)
	}
	sc.cmd = s.command(&sc, false)
	s.pipe.mu.Lock()
	s.pipe.queue = append(s.pipe.queue, sc)
	idle := !s.pipe.sending
	s.pipe.sending = true
	s.pipe.mu.Unlock()
	if idle {
		go s.sendQueued()
	}
}

// pipeline is the queue of the calls started with Start.
type pipeline struct {
	mu      sync.Mutex
	queue   []startedCall
	sending bool          // a goroutine is sending the queue
	spare   []startedCall // the sending goroutine's buffer, kept for the next one
}

// startedCall is a call queued by Start. It keeps the caller's context,
// for its deadline and to tell its outcome, until the call is answered.
type startedCall struct {
	ctx     context.Context
	call    lock.Call
	key     string
	waiters string // the waiters' queue, for a release
	cmd     rueidis.Completed
	done    func(uint64, error)
}

// command builds the command of sc: EVALSHA for the scripts, or EVAL
// when full.
func (s *Store) command(sc *startedCall, full bool) rueidis.Completed {
	b := s.client.B()
	c := sc.call
	switch c.Op {
	case lock.CallAcquire:
		return s.setNX(b, sc.key, c.Token, c.TTL)
	case lock.CallRelease:
		keys, args := [2]string{sc.key, sc.waiters}, [3]string{c.Token}
		return scriptCmd(b, &releaseScript, full, &keys, &args)
	default: // lock.CallExtend
		keys, args := [2]string{sc.key}, [3]string{c.Token, s.ttlArg(c.TTL)}
		return scriptCmd(b, &extendScript, full, &keys, &args)
	}
}

// sendQueued sends the queued calls, batch after batch, until none are
// left.
func (s *Store) sendQueued() {
	p := &s.pipe
	p.mu.Lock()
	batch := p.spare // only one goroutine sends at a time
	for {
		batch, p.queue = p.queue, batch[:0]
		if len(batch) == 0 {
			p.spare = batch
			p.sending = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		s.send(batch)
		clear(batch) // let go of the contexts and callbacks
		p.mu.Lock()
	}
}

// send sends one batch and tells every call its outcome.
func (s *Store) send(batch []startedCall) {
	var deadline time.Time
	// A new slice for every batch: when the deadline passes first, the
	// client still holds the commands until it has written them.
	cmds := make([]rueidis.Completed, 0, len(batch))
	live := batch[:0] // the calls to send, compacted in place
	for i := range batch {
		sc := &batch[i]
		if err := sc.ctx.Err(); err != nil {
			sc.done(0, err) // not sent: it has no effect
			continue
		}
		if d, ok := sc.ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
			deadline = d
		}
		live = append(live, *sc)
		cmds = append(cmds, sc.cmd)
	}
	if len(live) == 0 {
		return
	}
	var ctx context.Context
	var results []rueidis.RedisResult
	if len(cmds) == 1 {
		// The call's own context: no context or timer for the batch.
		// (Its cancellation may then cut the call short, as it would
		// the blocking method's.)
		ctx = live[0].ctx
		one := [1]rueidis.RedisResult{s.client.Do(ctx, cmds[0])}
		results = one[:]
	} else {
		var cancel context.CancelFunc = func() {}
		ctx = context.Background()
		if !deadline.IsZero() {
			ctx, cancel = context.WithDeadline(ctx, deadline)
		}
		defer cancel()
		results = s.client.DoMulti(ctx, cmds...)
	}

	// Scripts the server does not know (after SCRIPT FLUSH, a restart or a
	// failover) are sent again in full; commands that never left (see
	// notSent) are sent again as they were.
	var fullScript []bool
	for range maxResends {
		var again []int
		for i, r := range results {
			if noScript := isNoScript(r.Error()); noScript || notSent(ctx, r.Error()) {
				if fullScript == nil {
					fullScript = make([]bool, len(live))
				}
				again = append(again, i)
				fullScript[i] = fullScript[i] || noScript
			}
		}
		if again == nil {
			break
		}
		cmds := make([]rueidis.Completed, len(again))
		for j, i := range again {
			cmds[j] = s.command(&live[i], fullScript[i])
		}
		for j, r := range s.client.DoMulti(ctx, cmds...) {
			results[again[j]] = r
		}
	}
	for i := range live {
		sc := &live[i]
		if sc.call.Op == lock.CallAcquire && rueidis.IsRedisNil(results[i].Error()) {
			// Refused: one more round trip tells a lock from a key of
			// another type (see refused), off this sending goroutine.
			refusal := *sc // the batch is cleared once sent
			go func() { refusal.done(0, s.refused(refusal.ctx, refusal.key)) }()
			continue
		}
		sc.done(0, s.outcome(sc, results[i]))
	}
}

// outcome turns the answer to a started call into the error the blocking
// method would have returned.
func (s *Store) outcome(sc *startedCall, r rueidis.RedisResult) error {
	if sc.call.Op == lock.CallAcquire {
		switch err := r.Error(); {
		case err == nil:
			return nil
		case rueidis.IsRedisNil(err):
			return lock.ErrNotAcquired
		default:
			return s.failed(sc.ctx, err)
		}
	}
	n, err := r.AsInt64() // release: 0, 1 or 2; extend: 0 or 1
	switch {
	case err != nil:
		return s.failed(sc.ctx, err)
	case n == 0:
		return lock.ErrNotHeld
	}
	return nil
}
