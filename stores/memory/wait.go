package memory

import (
	"context"
	"time"
)

// waitQueue holds the callers waiting for one resource, in arrival order.
type waitQueue struct {
	waiters []*waiter
	until   instant       // the expiry the waiters' timers are set for
	rearm   chan struct{} // closed when the lock is set to expire before until
}

type waiter struct {
	ch    chan struct{} // closed when a release wakes this waiter
	woken bool          // set, under the shard's mutex, when ch is closed
}

// WaitRelease implements [lock.Waiter]. It returns nil at once if resource
// is free, and otherwise blocks until a release or Expire wakes it, the lock
// expires, or ctx ends. A release wakes the longest-waiting caller only; a
// caller that leaves because its ctx ended passes a wake it received on to
// the next. A lock set to expire sooner than the waiters expect (extended
// for less, or taken again for less after a release that woke another)
// wakes them to look again; looking again keeps a caller's place in line.
func (s *Store) WaitRelease(ctx context.Context, resource string) error {
	if err := s.beginWait(ctx, resource); err != nil {
		return err
	}
	sh := s.shard(resource)
	w := &waiter{ch: make(chan struct{})}
	inLine := false
	for {
		sh.mu.Lock()
		now := s.now() // once locked: a lock that expired meanwhile is free
		e := sh.locks[resource]
		if w.woken || e == nil || !e.live(now) {
			if inLine && !w.woken {
				sh.remove(resource, w)
			}
			sh.mu.Unlock()
			return nil
		}
		if sh.waiters == nil {
			sh.waiters = make(map[string]*waitQueue)
		}
		q := sh.waiters[resource]
		if q == nil {
			q = &waitQueue{}
			sh.waiters[resource] = q
		}
		if !inLine {
			q.waiters, inLine = append(q.waiters, w), true
		}
		if q.rearm == nil {
			q.rearm = make(chan struct{})
		}
		q.until = e.expires
		rearm, left := q.rearm, time.Duration(e.expires-now)
		sh.mu.Unlock()

		expiry := time.NewTimer(left)
		select {
		case <-w.ch:
			expiry.Stop()
			return nil
		case <-ctx.Done():
			expiry.Stop()
			sh.leave(resource, w)
			return ctx.Err()
		case <-expiry.C: // expired, or extended: look again
		case <-rearm: // set to expire sooner: look again
			expiry.Stop()
		}
	}
}

// expiresSooner tells the waiters of resource, if any, that its lock now
// expires at expires, and wakes them to look again if that is before
// the expiry their timers are set for. Called with mu held.
func (sh *shard) expiresSooner(resource string, expires instant) {
	if sh.waiters == nil {
		return
	}
	if q := sh.waiters[resource]; q != nil && q.rearm != nil && expires < q.until {
		close(q.rearm)
		q.rearm = nil
	}
}

// wakeOne wakes the longest-waiting caller of resource. Called with mu held.
func (sh *shard) wakeOne(resource string) {
	q := sh.waiters[resource]
	if q == nil {
		return
	}
	q.wakeOne()
	if len(q.waiters) == 0 {
		delete(sh.waiters, resource)
	}
}

// leave removes w from the queue of resource; if a release had already
// woken it, the wake goes to the next waiter.
func (sh *shard) leave(resource string, w *waiter) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if w.woken {
		sh.wakeOne(resource)
		return
	}
	sh.remove(resource, w)
}

// remove takes w, which no release woke, out of the queue of resource.
// Called with mu held.
func (sh *shard) remove(resource string, w *waiter) {
	q := sh.waiters[resource]
	if q == nil {
		return
	}
	q.remove(w)
	if len(q.waiters) == 0 {
		delete(sh.waiters, resource)
	}
}
