package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/lockkit/lock"
)

// AcquireFenced implements [lock.Fencer]: SET NX PX, INCR of the fence
// counter and PEXPIRETIME, in one round trip on one connection; a second
// round trip lifts the counter to the server's clock when it is behind it
// (about once a millisecond under load, and after a restart or failover).
// See the package documentation on fencing for why fences increase.
func (s *Store) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return 0, err
	}
	key := s.lockKey(resource)
	if s.guard > 0 {
		return s.acquireGuarded(ctx, true, key, token, ttl)
	}
	if err := s.handoffs.yield(ctx, key); err != nil {
		return 0, err
	}
	if s.replicas > 0 {
		for {
			fence, err := s.acquireReplicated(ctx, true, key, token, ttl)
			if err != errNoSetGet {
				return fence, err
			}
		}
	}
	b := batches.Get().(*batch)
	defer batches.Put(b)
	for {
		n := s.fencedCmds((*[3]Cmd)(b.cmds[:3]), key, token, ttl)
		s.client.DoMulti(ctx, b.cmds[:n], b.replies[:n], false)
		fence, err := s.fenced(ctx, &b.cmds[0], ttl, b.replies[:n])
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
// key into cmds and returns how many there are: SET NX PX GET, then INCR
// of the counter and PEXPIRETIME — or, when this store has not lifted the
// counter for a while (it is then likely behind the clock: few fences are
// taken) or the server lacks PEXPIRETIME, the lift script instead, which
// takes the fence lifted: one round trip either way.
func (s *Store) fencedCmds(cmds *[3]Cmd, key, token string, ttl time.Duration) int {
	cmds[0] = s.setNX(key, token, ttl)
	if s.liftDue() {
		cmds[1] = script(liftScript, []string{s.counterKey(key)}, "0", liftAheadArg)
		return 2
	}
	cmds[1] = cmd1("INCR", s.counterKey(key))
	cmds[2] = cmd1("PEXPIRETIME", key)
	return 3
}

// liftDue reports whether the fenced acquisitions of this store lift the
// counter as they take their fence: when the server lacks PEXPIRETIME,
// and when the store has not lifted it for half of LiftAhead — and so
// marks it lifted now. Under load, that is one acquisition in many; when
// fences are rare, all of them, at the cost of a script rather than a
// second round trip.
func (s *Store) liftDue() bool {
	if s.noExpireTime.Load() {
		return true
	}
	now := time.Now().UnixNano()
	last := s.lastLift.Load()
	return now-last > LiftAhead*1000/2 && s.lastLift.CompareAndSwap(last, now)
}

// counterKey returns the fence counter of the lock at key.
func (s *Store) counterKey(key string) string { return CounterKey(key, s.cluster) }

// fenced returns the outcome of a fenced acquisition from the replies to
// its commands (see fencedCmds; set is the first), lifting the counter if
// its value is behind the server's clock.
func (s *Store) fenced(ctx context.Context, set *Cmd, ttl time.Duration, r []Reply) (uint64, error) {
	key := set.Keys[0]
	if err := s.acquired(ctx, set, r[0]); err != nil {
		return 0, err
	}
	// The lock is held from here on: an error now is no lock outcome,
	// and the lockers release by token.
	counter := r[1]
	switch {
	case len(r) == 2 && counter.noScript():
		return s.lift(ctx, s.counterKey(key), 0) // the lift script, loaded
	case counter.Err != nil:
		return 0, s.failed(ctx, fmt.Errorf("%s: fence counter: %w", s.kind, counter.Err))
	case len(r) == 2: // lifted by the script
		return uint64(counter.Int), nil
	}
	lift := false
	switch e := r[2]; {
	case e.unknownCommand(): // Redis before 7.0
		s.noExpireTime.Store(true)
		lift = true
	case e.Err != nil:
		return 0, s.failed(ctx, e.Err)
	case e.Int < 0:
		return 0, fmt.Errorf("%s: the lock %q expired before its fence was taken (PEXPIRETIME %d): its TTL is shorter than the server took to answer", s.kind, key, e.Int)
	default:
		lift = behind(counter.Int, e.Int, ttl)
	}
	if !lift {
		return uint64(counter.Int), nil
	}
	return s.lift(ctx, s.counterKey(key), 0)
}

// behind reports whether a fence counter's value c, taken with a lock of
// the given TTL whose PEXPIRETIME was expireAt, is behind the server's
// clock at that moment (in whole ms, as µs), so that it must be lifted.
// liftScript puts a counter half to all of LiftAhead ahead of the clock:
// it is behind again that much later, so lifts are rare (and come in bursts of
// the calls in flight), and fences stay within LiftAhead of the clock.
func behind(c, expireAt int64, ttl time.Duration) bool {
	return c < (expireAt-Millis(ttl))*1000
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
	return uint64(r.Int), nil
}

// MaxFence is the largest fence RaiseFence takes: 2^53, the largest
// integer Lua's numbers (doubles) keep exactly. Fences handed out by the
// Redis stores are timestamps in microseconds, far below it.
const MaxFence = 1 << 53

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
		return fmt.Errorf("%w: RaiseFence(%d): fences above 2^53 cannot be kept exactly by the %s store", lock.ErrInvalid, fence, s.kind)
	}
	return s.check(ctx, resource, "-", 1)
}

// LastFence returns the value of the fence counter of resource: no fence
// handed out for resource so far is greater, and the next is greater. The
// counter is shared (by the server's resources, or by those of the
// resource's cluster slot), so the value is that of the last fence of any
// of them; it reports false if there is no counter (no fence handed out
// since the server lost its data). While a lock taken with AcquireFenced
// is held and no other was taken since, the value is its fence. It is
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
