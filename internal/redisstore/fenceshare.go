package redisstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lockkit/lock"
)

// Shared fences. Fenced acquisitions that go out in one batch of started
// calls (see Start) share one INCRBY of the fence counter, sent after all
// of their acquisition commands, instead of one INCR each: the k-th of n
// takes the k-th of the n values INCRBY counted up. Each value still
// comes from a counter increment that ran after its acquisition's SET
// (one connection runs a batch in order) and before its holder had its
// answer, so before it could release — all the argument of the package
// documentation needs: fences still increase strictly per resource. On
// one server, under load, the counter then costs one command per batch
// rather than one per lock. (On a cluster every acquisition keeps its own
// INCR and PEXPIRETIME, on its slot's counter.)
//
// An acquisition made with Acquire or AcquireFenced goes out in such a
// batch when more than soloAcquisitions of them are under way in the
// store at once, on one server; fewer each send their own round trip, as
// a batch would only make them wait for one another. Besides the fence
// increments, a batch saves the client a round trip's work per call (on
// go-redis, a pipeline and its connection): docs/performance.md has the
// measurements.

// soloAcquisitions is how many Acquire and AcquireFenced calls at once
// send their own commands before further ones queue to share a batch.
const soloAcquisitions = 4

// ShareBatches makes every Acquire and AcquireFenced of s on one server
// go out in a shared batch, however few are under way: for tests of that
// path.
func ShareBatches(s *Store) { s.shareAll.Store(true) }

// shares reports whether an acquisition, one of n under way in s, goes
// out in a shared batch.
func (s *Store) shares(n int32) bool {
	return !s.cluster && (n > soloAcquisitions || s.shareAll.Load())
}

// errFenceBeforeLock is the fence counter's error of a shared fence whose
// acquisition was sent again after the batch's INCRBY ran: the value
// counted may be older than the lock, so the acquisition has no fence.
var errFenceBeforeLock = errors.New("the acquisition was sent again after its fence was counted")

// fenceShares is where a batch's shared INCRBY is, and which commands
// are fenced acquisitions whose fence the batch counts.
type fenceShares struct {
	at     int    // the INCRBY's index in the batch's commands; -1 if none
	n      int    // acquisitions sharing it
	fenced []bool // by command index: a fenced acquisition whose fence the batch counts; nil if none
}

// fenceFollows reports whether command i of the batch is a fenced
// acquisition whose fence the batch counts after it (in its own INCR or
// the shared INCRBY): one the server answers NOSCRIPT (a claim) is not
// sent again, as the fence counted would be older than the lock; its
// outcome claims in full and takes a fence of its own (see
// Store.fenced).
func (f fenceShares) fenceFollows(i int) bool { return f.fenced != nil && f.fenced[i] }

// shareable reports whether the fence of sc, a started call, can come
// from its batch's shared increment: a fenced acquisition on one server
// that takes its fence with a plain INCR (not the lift script).
func (s *Store) shareable(sc *startedCall) bool {
	return !s.cluster && sc.call.Op == lock.CallAcquireFenced && sc.n == 2 && sc.cmds[1].Name == "INCR"
}

// batchCmds returns the commands of a batch of started calls, in order,
// with the INCRs of shareable fenced acquisitions replaced by one INCRBY
// at the end, and where that INCRBY is.
func (s *Store) batchCmds(live []*startedCall) ([]Cmd, fenceShares) {
	f := fenceShares{at: -1}
	size := 0
	for _, sc := range live {
		sc.shared = s.shareable(sc)
		size += sc.n
		if sc.shared {
			f.n++
		}
	}
	if f.n < 2 {
		for _, sc := range live {
			sc.shared = false
		}
		f.n = 0
	}
	cmds := make([]Cmd, 0, size-f.n+1)
	var counter string
	for _, sc := range live {
		if sc.call.Op == lock.CallAcquireFenced && sc.n > 1 && sc.cmds[0].Script != nil {
			if f.fenced == nil {
				f.fenced = make([]bool, cap(cmds))
			}
			f.fenced[len(cmds)] = true
		}
		if !sc.shared {
			cmds = append(cmds, sc.cmds[:sc.n]...)
			continue
		}
		counter = sc.cmds[1].Keys[0] // one per server: FenceKey
		cmds = append(cmds, sc.cmds[0])
	}
	if f.n > 0 {
		f.at = len(cmds)
		cmds = append(cmds, cmd1("INCRBY", counter, itoa(int64(f.n))))
	}
	return cmds, f
}

// scatter writes each call's replies, in order, into its replies: a
// sharing acquisition gets its value of the shared increment as its
// INCR's reply. round says in which round each command was last sent
// (see Store.resend), nil if none was sent again.
func (f fenceShares) scatter(live []*startedCall, replies []Reply, round []uint8) {
	i, k := 0, int64(0)
	for _, sc := range live {
		if !sc.shared {
			i += copy(sc.replies[:sc.n], replies[i:])
			continue
		}
		sc.replies[0] = replies[i]
		incr := replies[f.at]
		switch {
		case incr.Err != nil:
			sc.replies[1] = incr
		case round != nil && round[i] > round[f.at]:
			sc.replies[1] = Reply{Err: errFenceBeforeLock}
		default:
			sc.replies[1] = Reply{Int: incr.Int - int64(f.n) + 1 + k}
		}
		i++
		k++
	}
}

// acquireShared is Acquire (op lock.CallAcquire) or AcquireFenced
// through the store's batches of started calls: see soloAcquisitions.
// The call is answered by its context as a blocking call is: if it ends
// first, with an unknown outcome.
func (s *Store) acquireShared(ctx context.Context, op lock.CallOp, resource, key, token string, ttl time.Duration) (uint64, error) {
	c := sharedCalls.Get().(*sharedCall)
	sc := &c.startedCall
	sc.ctx = ctx
	sc.call = lock.Call{Op: op, Resource: resource, Token: token, TTL: ttl}
	sc.key = key
	if op == lock.CallAcquireFenced {
		sc.n = s.fencedCmds(&sc.cmds, true, key, token, ttl)
	} else {
		sc.cmds[0], sc.n = s.take(key, token, ttl), 1
	}
	take := sc.cmds[0] // the batch may read sc.cmds meanwhile, and write its own
	s.enqueue(sc)
	var a sharedAnswer
	select {
	case a = <-c.answers:
	case <-ctx.Done():
		if sc.answered.CompareAndSwap(false, true) {
			// Not answered: the batch may still hold sc, which is
			// left to the garbage collector. Whether it sent the
			// acquisition or not, nothing tells.
			s.unclaimed(&take)
			return 0, s.failed(ctx, ctx.Err())
		}
		a = <-c.answers
	}
	c.reset()
	sharedCalls.Put(c)
	return a.fence, a.err
}

// sharedCall is a started call of acquireShared, reused: once its done
// has been called, nothing of the batch touches it (see
// startedCall.answer).
type sharedCall struct {
	startedCall
	answers chan sharedAnswer
}

// sharedAnswer is the outcome of a sharedCall.
type sharedAnswer struct {
	fence uint64
	err   error
}

var sharedCalls = sync.Pool{New: func() any {
	c := &sharedCall{answers: make(chan sharedAnswer, 1)}
	c.done = func(fence uint64, err error) { c.answers <- sharedAnswer{fence, err} }
	c.stop = watchNothing
	return c
}}

// reset readies an answered c for its next call.
func (c *sharedCall) reset() {
	c.ctx, c.call, c.key = nil, lock.Call{}, ""
	c.cmds, c.replies = [3]Cmd{}, [3]Reply{}
	c.n, c.shared = 0, false
	c.answered.Store(false)
}

// watchNothing is the stop of a started call whose caller watches its
// context itself.
func watchNothing() bool { return false }
