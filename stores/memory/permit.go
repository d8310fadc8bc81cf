package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/lockkit/lock"
)

var (
	_ lock.Permitter    = (*Store)(nil)
	_ lock.PermitWaiter = (*Store)(nil)
)

// permitTable is a shard's counted permits, by resource. A resource's set
// is deleted once it holds no live permit and no one waits on it, when a
// call finds it so or when the table is swept, so memory stays bounded by
// the live permits.
type permitTable struct {
	sets    map[string]*permitSet
	sweepAt int // sweep when the map reaches this size
}

// permitSet is the permits on one resource: their holders' expiries, the
// limit they were taken under, and the callers waiting for one.
type permitSet struct {
	limit   int
	holders map[string]instant // token → expiry
	waiting waitQueue
	rearm   chan struct{} // closed when a permit that expires before all others is set: waiters' timers are late
}

// setExpiry sets token's expiry, and tells the waiters, whose timers run
// to the earliest expiry they saw, if it is now earlier.
func (p *permitSet) setExpiry(token string, exp instant) {
	if len(p.waiting.waiters) > 0 && (len(p.holders) == 0 || exp < p.earliest()) && p.rearm != nil {
		close(p.rearm)
		p.rearm = nil
	}
	p.holders[token] = exp
}

// prune forgets the expired holders, and reports how many are left.
func (p *permitSet) prune(now instant) int {
	for tok, exp := range p.holders {
		if now >= exp {
			delete(p.holders, tok)
		}
	}
	return len(p.holders)
}

// earliest is the first expiry among the holders. Called after prune.
func (p *permitSet) earliest() instant {
	var first instant
	for _, exp := range p.holders {
		if first == 0 || exp < first {
			first = exp
		}
	}
	return first
}

// permitSet returns resource's live set, pruned, or nil; with create, it makes
// an empty one if there is none. Called with the shard's mutex held.
func (sh *shard) permitSet(resource string, now instant, create bool) *permitSet {
	t := &sh.permits
	p := t.sets[resource]
	if p == nil {
		if !create {
			return nil
		}
		if t.sets == nil {
			t.sets = make(map[string]*permitSet)
		}
		if len(t.sets) >= t.sweepAt {
			for r, q := range t.sets {
				if q.prune(now) == 0 && len(q.waiting.waiters) == 0 {
					delete(t.sets, r)
				}
			}
			t.sweepAt = 2*len(t.sets) + 64
		}
		p = &permitSet{holders: make(map[string]instant)}
		t.sets[resource] = p
		return p
	}
	p.prune(now)
	return p
}

// tidyPermits deletes resource's set if it holds nothing and no one waits.
// Called with the shard's mutex held.
func (sh *shard) tidyPermits(resource string, p *permitSet) {
	if len(p.holders) == 0 && len(p.waiting.waiters) == 0 {
		delete(sh.permits.sets, resource)
	}
}

// AcquirePermit implements [lock.Permitter]. Fences come from the counter
// of AcquireFenced, so they increase strictly for each resource, permits
// and locks alike. Fault injection treats it as OpAcquire.
func (s *Store) AcquirePermit(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
	if err := check(ctx, resource, token, ttl); err != nil {
		return 0, err
	}
	if limit < 1 {
		return 0, fmt.Errorf("%w: limit is %d: want >= 1", lock.ErrInvalid, limit)
	}
	apply := func() (uint64, error) { return s.applyAcquirePermit(resource, token, limit, ttl) }
	f, err := s.faults.before(ctx, OpAcquire)
	if err != nil {
		return 0, landLate(err, func() { _, _ = apply() })
	}
	fence, err := apply()
	return fence, f.after(err)
}

// applyAcquirePermit is the effect of AcquirePermit. It reads the clock
// once the shard is locked, so that permits that expired while it waited
// for the mutex do not count.
func (s *Store) applyAcquirePermit(resource, token string, limit int, ttl time.Duration) (uint64, error) {
	sh := s.shard(resource)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	p := sh.permitSet(resource, now, true)
	n := len(p.holders)
	switch {
	case n > 0 && p.limit != limit:
		return 0, fmt.Errorf("%w: the %d permits held on %q were taken with limit %d, not %d", lock.ErrLimitMismatch, n, resource, p.limit, limit)
	case n >= limit:
		return 0, lock.ErrNotAcquired
	}
	if _, held := p.holders[token]; held {
		return 0, lock.ErrNotAcquired // one permit per token: not re-entrant
	}
	p.limit = limit
	p.setExpiry(token, now.add(ttl))
	sh.fence++
	return sh.fence, nil
}

// ReleasePermit implements [lock.Permitter]: it frees the permit and wakes
// one waiter. Fault injection treats it as OpRelease.
func (s *Store) ReleasePermit(ctx context.Context, resource, token string) error {
	return s.onPermit(ctx, OpRelease, resource, token, 1, func(p *permitSet, _ instant) {
		delete(p.holders, token)
		p.waiting.wakeOne()
	})
}

// ExtendPermit implements [lock.Permitter]. Fault injection treats it as
// OpExtend.
func (s *Store) ExtendPermit(ctx context.Context, resource, token string, ttl time.Duration) error {
	return s.onPermit(ctx, OpExtend, resource, token, ttl, func(p *permitSet, now instant) {
		p.setExpiry(token, now.add(ttl))
	})
}

// onPermit makes a call of op that applies change to the permit token
// holds on resource, under the shard's mutex, or returns ErrNotHeld if
// it holds none.
func (s *Store) onPermit(ctx context.Context, op Op, resource, token string, ttl time.Duration, change func(p *permitSet, now instant)) error {
	if err := check(ctx, resource, token, ttl); err != nil {
		return err
	}
	apply := func() error {
		sh := s.shard(resource)
		sh.mu.Lock()
		defer sh.mu.Unlock()
		now := s.now() // once locked: a permit that expired meanwhile is not re-created
		p := sh.permitSet(resource, now, false)
		if p == nil {
			return lock.ErrNotHeld
		}
		defer sh.tidyPermits(resource, p)
		if _, held := p.holders[token]; !held {
			return lock.ErrNotHeld
		}
		change(p, now)
		return nil
	}
	f, err := s.faults.before(ctx, op)
	if err != nil {
		return landLate(err, func() { _ = apply() })
	}
	return f.after(apply())
}

// Permits implements [lock.Permitter]. Fault injection treats it as
// OpExists.
func (s *Store) Permits(ctx context.Context, resource string) (int, error) {
	if err := check(ctx, resource, "-", 1); err != nil {
		return 0, err
	}
	f, err := s.faults.before(ctx, OpExists)
	if err != nil {
		return 0, err
	}
	sh := s.shard(resource)
	sh.mu.Lock()
	now := s.now()
	n := 0
	if p := sh.permitSet(resource, now, false); p != nil {
		n = len(p.holders)
		sh.tidyPermits(resource, p)
	}
	sh.mu.Unlock()
	return n, f.after(nil)
}

// ExpirePermits makes every permit on resource expire now, as if their
// TTLs had run out, and wakes one waiter per permit it frees, as that
// many releases would. It returns how many were held.
func (s *Store) ExpirePermits(resource string) int {
	sh := s.shard(resource)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	p := sh.permitSet(resource, now, false)
	if p == nil {
		return 0
	}
	n := len(p.holders)
	clear(p.holders)
	for range n {
		p.waiting.wakeOne()
	}
	sh.tidyPermits(resource, p)
	return n
}

// WaitPermit implements [lock.PermitWaiter]: it returns nil at once if a
// permit on resource is free, and otherwise blocks until a release or
// ExpirePermits wakes it, a permit expires, or ctx ends. A release wakes
// the longest-waiting caller only, one per freed permit; a caller that
// leaves because its ctx ended passes a wake it received on to the next.
// A permit set to expire sooner than the waiters expect (extended for
// less) wakes them to look again; looking again, or at a permit that was
// extended, keeps a caller's place in line. Fault injection treats it as
// OpWait.
func (s *Store) WaitPermit(ctx context.Context, resource string) error {
	if err := s.beginWait(ctx, resource); err != nil {
		return err
	}
	sh := s.shard(resource)
	w := &waiter{ch: make(chan struct{})}
	inLine := false
	for {
		sh.mu.Lock()
		now := s.now() // once locked: a permit that expired meanwhile is free
		p := sh.permitSet(resource, now, false)
		if w.woken || p == nil || len(p.holders) < max(p.limit, 1) {
			if p != nil {
				if inLine && !w.woken {
					p.waiting.remove(w)
				}
				sh.tidyPermits(resource, p)
			}
			sh.mu.Unlock()
			return nil
		}
		left := time.Duration(p.earliest() - now)
		if !inLine {
			p.waiting.waiters, inLine = append(p.waiting.waiters, w), true
		}
		if p.rearm == nil {
			p.rearm = make(chan struct{})
		}
		rearm := p.rearm
		sh.mu.Unlock()

		if woken, err := w.await(ctx, left, rearm, func() { sh.leavePermit(resource, w) }); woken || err != nil {
			return err
		}
	}
}

// await waits for w to be woken, for left (the earliest expiry), for
// rearm to close (a sooner expiry was set), or for ctx to end, and calls
// leave if ctx ends first. It reports whether w was woken, or ctx's
// error; a caller that gets neither looks again, still in line.
func (w *waiter) await(ctx context.Context, left time.Duration, rearm <-chan struct{}, leave func()) (woken bool, err error) {
	expiry := time.NewTimer(left)
	defer expiry.Stop()
	select {
	case <-w.ch:
		return true, nil
	case <-ctx.Done():
		leave()
		return false, ctx.Err()
	case <-expiry.C: // expired, or extended: look again
	case <-rearm:
	}
	return false, nil
}

// leavePermit removes w from resource's permit waiters; if a release had
// already woken it, the wake goes to the next waiter.
func (sh *shard) leavePermit(resource string, w *waiter) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	p := sh.permits.sets[resource]
	if p == nil {
		return
	}
	if w.woken {
		p.waiting.wakeOne()
	} else {
		p.waiting.remove(w)
	}
	sh.tidyPermits(resource, p)
}

// wakeOne wakes the longest-waiting caller in q, if any, and reports
// whether it woke one. Called with the shard's mutex held.
func (q *waitQueue) wakeOne() bool {
	if len(q.waiters) == 0 {
		return false
	}
	w := q.waiters[0]
	q.waiters = q.waiters[1:]
	w.woken = true
	close(w.ch)
	return true
}

// remove takes w out of q. Called with the shard's mutex held.
func (q *waitQueue) remove(w *waiter) {
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			return
		}
	}
}

// beginWait checks the arguments of a wait and applies an injected fault.
func (s *Store) beginWait(ctx context.Context, resource string) error {
	if err := check(ctx, resource, "-", 1); err != nil {
		return err
	}
	f, err := s.faults.before(ctx, OpWait)
	if err != nil {
		return err
	}
	if f != nil && f.Err != nil {
		return f.Err
	}
	return nil
}
