package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockkit/lock"
)

// AcquireFenced implements [lock.Fencer]: SET NX PX and INCR of the fence
// counter (and, on a cluster, PEXPIRETIME) in one round trip on one
// connection; a second round trip lifts the counter to the server's clock
// when it is behind it (after a restart or a failover). Under load, on
// one server, without the restart guard or WithWaitReplicas, acquisitions
// share an INCRBY (see soloAcquisitions). See the package documentation
// on fencing for why fences increase.
func (s *Store) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return 0, err
	}
	key := s.lockKey(resource)
	if err := s.handoffs.yield(ctx, key); err != nil {
		return 0, err
	}
	if s.guard > 0 {
		return s.acquireGuarded(ctx, true, key, token, ttl)
	}
	if s.replicas > 0 {
		for {
			fence, err := s.acquireReplicated(ctx, true, key, token, ttl)
			if err != errNoSetGet {
				return fence, err
			}
		}
	}
	defer s.acquiring.Add(-1)
	if s.shares(s.acquiring.Add(1)) {
		return s.acquireShared(ctx, lock.CallAcquireFenced, resource, key, token, ttl)
	}
	b := batches.Get().(*batch)
	defer batches.Put(b)
	for {
		n := s.fencedCmds((*[3]Cmd)(b.cmds[:3]), true, key, token, ttl)
		s.client.DoMulti(ctx, b.cmds[:n], b.replies[:n], false)
		fence, err := s.fenced(ctx, b.cmds[:n], ttl, b.replies[:n])
		if err != errNoSetGet {
			return fence, err
		}
	}
}

// batch holds the commands and replies of one pipeline of a call: pooled,
// as a slice passed through Client escapes to the heap.
type batch struct {
	cmds    [4]Cmd
	replies [4]Reply
}

var batches = sync.Pool{New: func() any { return new(batch) }}

// fencedCmds writes the commands of a fenced acquisition of the lock at
// key into cmds and returns how many there are: SET NX PX GET (or, with
// claim, what take returns) and INCR of
// the counter, then on a cluster PEXPIRETIME (the clock of the counter's
// master) — or, when this store has not lifted the counter for a while
// (it is then likely behind the clock: few fences are taken), the lift
// script in place of INCR and PEXPIRETIME, which takes the fence lifted:
// one round trip either way.
func (s *Store) fencedCmds(cmds *[3]Cmd, claim bool, key, token string, ttl time.Duration) int {
	if claim {
		cmds[0] = s.take(key, token, ttl)
	} else {
		cmds[0] = s.setNX(key, token, ttl)
	}
	if s.liftDue() {
		cmds[1] = script(liftScript, []string{s.counterKey(key)}, "0", liftAheadArg)
		return 2
	}
	cmds[1] = cmd1("INCR", s.counterKey(key))
	if !s.cluster {
		return 2
	}
	cmds[2] = cmd1("PEXPIRETIME", key)
	return 3
}

// liftDue reports whether the fenced acquisitions of this store lift the
// counter as they take their fence: on a cluster whose servers lack
// PEXPIRETIME, and when the store has not lifted it for half of
// LiftAhead — and so marks it lifted now. Under load, that is one
// acquisition in many; when fences are rare, all of them, at the cost of
// a script rather than a second round trip.
func (s *Store) liftDue() bool {
	if s.noExpireTime.Load() {
		return true
	}
	if s.holdLifts.Load() {
		return false
	}
	now := time.Now().UnixNano()
	last := s.lastLift.Load()
	return now-last > LiftAhead*1000/2 && s.lastLift.CompareAndSwap(last, now)
}

// HoldLifts makes s lift the fence counter only when it finds it behind
// the server's clock, never because a while has passed since its last
// lift: for tests of that finding.
func HoldLifts(s *Store) { s.holdLifts.Store(true) }

// counterKey returns the fence counter of the lock at key.
func (s *Store) counterKey(key string) string { return CounterKey(key, s.cluster) }

// fenced returns the outcome of a fenced acquisition from the replies r
// to its commands cmds (see fencedCmds), lifting the counter if its value
// is behind the server's clock.
func (s *Store) fenced(ctx context.Context, cmds []Cmd, ttl time.Duration, r []Reply) (uint64, error) {
	key := cmds[0].Keys[0]
	if cmds[0].Script != nil && r[0].noScript() {
		// The claim script was not loaded: it took nothing, and the INCR
		// after it only skipped a value. Claim in full, then take a
		// fence that follows the claim.
		claim := cmds[0]
		claim.Full = true
		if err := s.acquired(ctx, &claim, s.do(ctx, claim)); err != nil {
			return 0, err
		}
		return s.lift(ctx, s.counterKey(key), 0)
	}
	if err := s.acquired(ctx, &cmds[0], r[0]); err != nil {
		return 0, err
	}
	// The lock is held from here on: an error now is no lock outcome,
	// and the lockers release by token.
	counter := r[1]
	lifting := cmds[1].Script != nil
	switch {
	case lifting && counter.noScript():
		return s.lift(ctx, s.counterKey(key), 0) // the lift script, loaded
	case counter.Err != nil:
		return 0, s.failed(ctx, fmt.Errorf("%s: fence counter: %w", s.kind, counter.Err))
	case lifting:
		return s.lifted(counter)
	}
	if len(r) == 3 {
		switch e := r[2]; {
		case e.unknownCommand(): // Redis before 7.0
			s.noExpireTime.Store(true)
			return s.lift(ctx, s.counterKey(key), 0)
		case e.Err != nil:
			return 0, s.failed(ctx, e.Err)
		case e.Int < 0:
			return 0, fmt.Errorf("%s: the lock %q expired before its fence was taken (PEXPIRETIME %d): its TTL is shorter than the server took to answer", s.kind, key, e.Int)
		}
	}
	if !s.behind(r, ttl) {
		return uint64(counter.Int), nil
	}
	return s.lift(ctx, s.counterKey(key), 0)
}

// behind reports whether the fence counter's value in r[1], answered to
// the commands of fencedCmds without a lift, is behind the server's clock,
// so that it must be lifted. On a cluster the clock is that of the
// counter's master at that moment: PEXPIRETIME's answer r[2] less the
// TTL, in whole ms, as µs. On one server it is the store's reading of the
// server's clock (see serverNow), never ahead of it. The lift script puts
// a counter half to all of LiftAhead ahead of the clock, and the store
// lifts again after half of LiftAhead: so a counter is behind only when
// the server lost it, or lost its last increments (a restart, a failover),
// or when the server's clock jumped forward.
func (s *Store) behind(r []Reply, ttl time.Duration) bool {
	if len(r) == 3 {
		return r[1].Int < (r[2].Int-Millis(ttl))*1000
	}
	now, ok := s.serverNow()
	return !ok || r[1].Int < now
}

// serverClock is a reading of the server's clock: its time in µs, as the
// lift script answered it, and when the store had the answer.
type serverClock struct {
	micros int64
	at     time.Time // with its monotonic reading
}

// serverNow returns the server's clock now, in µs, as far as the store can
// tell from its last lift (false if it has none): the server's time then
// plus the time passed since. The server read its clock before it sent
// the answer the store took its time at, so the reading is behind the
// server's clock by the answer's way back, and ahead of it only as much as
// the client's clock runs faster in the half of LiftAhead between lifts.
func (s *Store) serverNow() (int64, bool) {
	c := s.clock.Load()
	if c == nil {
		return 0, false
	}
	return c.micros + time.Since(c.at).Microseconds(), true
}

// lifted returns the fence in the lift script's answer r ("fence time")
// and keeps the server's time it carries as the store's reading of its
// clock.
func (s *Store) lifted(r Reply) (uint64, error) {
	fence, now, ok := strings.Cut(r.Str, " ")
	f, err := strconv.ParseUint(fence, 10, 64)
	if err == nil && ok {
		var t int64
		if t, err = strconv.ParseInt(now, 10, 64); err == nil {
			s.clock.Store(&serverClock{micros: t, at: time.Now()})
			return f, nil
		}
	}
	return 0, fmt.Errorf("%s: fence counter: the lift script answered %q, not a fence and a time", s.kind, r.Str)
}

// LiftAhead is how far ahead of the server's clock a lift puts a fence
// counter at most, in microseconds (50ms; at least half of it): see the
// package documentation on fencing for what it bounds.
const LiftAhead = 50_000

var liftAheadArg = itoa(LiftAhead)

// lift takes the next value of counter, lifted to at least the server's
// clock in microseconds and to min: see liftScript.
func (s *Store) lift(ctx context.Context, counter string, min uint64) (uint64, error) {
	s.lastLift.Store(time.Now().UnixNano())
	r := s.eval(ctx, liftScript, []string{counter}, strconv.FormatUint(min, 10), liftAheadArg)
	if r.Err != nil {
		return 0, s.failed(ctx, fmt.Errorf("%s: fence counter: %w", s.kind, r.Err))
	}
	return s.lifted(r)
}

// MaxFence is the largest fence RaiseFence takes: 2^52, half of 2^53,
// the largest integer Lua's numbers (doubles) keep exactly, so that the
// fences that follow a raise, one more per acquisition, stay below 2^53
// (a counter raised to 2^53 went past it, and the scripts, rounding their
// INCR's answer, handed a fence out twice). Fences handed out by the
// Redis stores are timestamps in microseconds, about 1.8e15, far below
// it (2^52 µs is the year 2112).
const MaxFence = 1 << 52

// RaiseFence implements [lock.FenceRaiser]: every fence AcquireFenced
// hands out for resource from now on is greater than fence. It lifts the
// counter of the resource (shared with other resources: of the server, or
// of the resource's cluster slot) to fence if it is below, in one script,
// without lifting it to the clock: raised to exactly the fence a
// MultiLocker's lock carries, the counters of its stores agree again and
// their next fences are equal. A fence above
// MaxFence is refused with lock.ErrInvalid.
func (s *Store) RaiseFence(ctx context.Context, resource string, fence uint64) error {
	if err := s.checkRaise(ctx, resource, fence); err != nil {
		return err
	}
	r := s.eval(ctx, raiseScript, []string{s.counterKey(s.lockKey(resource))}, strconv.FormatUint(fence, 10))
	if r.Err != nil {
		return s.failed(ctx, fmt.Errorf("%s: fence counter: %w", s.kind, r.Err))
	}
	return nil
}

func (s *Store) checkRaise(ctx context.Context, resource string, fence uint64) error {
	if fence > MaxFence {
		return fmt.Errorf("%w: RaiseFence(%d): fences above 2^52 (MaxFence) would leave the %s store's later fences too little room below 2^53, where its scripts keep them exactly", lock.ErrInvalid, fence, s.kind)
	}
	return s.check(ctx, resource, "-", 1)
}

// LastFence returns the value of the fence counter of resource: no fence
// handed out for resource so far is greater, and the next is greater. The
// counter is shared (by the server's resources, or by those of the
// resource's cluster slot), so the value is that of the last fence of any
// of them; it reports false if there is no counter (no fence handed out
// since the server lost its data). While a lock taken with AcquireFenced
// is held and no other fenced acquisition sharing its counter was made
// since (a refused one takes a value too), the value is its fence. It is
// meant for administrative tools (lockctl status).
func (s *Store) LastFence(ctx context.Context, resource string) (uint64, bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return 0, false, err
	}
	counter := s.counterKey(s.lockKey(resource))
	r := s.do(ctx, cmd1("GET", counter))
	switch {
	case r.Nil:
		return 0, false, nil
	case r.Err != nil:
		return 0, false, s.failed(ctx, r.Err)
	}
	fence, err := strconv.ParseUint(r.Str, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s: fence counter %q holds %q, not a fence: %w", s.kind, counter, r.Str, err)
	}
	return fence, true, nil
}
