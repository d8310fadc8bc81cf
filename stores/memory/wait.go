package memory

import (
	"context"
	"time"
)

// waitQueue holds the callers waiting for one resource, in arrival order.
type waitQueue struct {
	waiters []*waiter
}

type waiter struct {
	ch    chan struct{} // closed when a release wakes this waiter
	woken bool          // set, under the shard's mutex, when ch is closed
}

// WaitRelease implements [lock.Waiter]. It returns nil at once if resource
// is free, and otherwise blocks until a release or Expire wakes it, the lock
// expires, or ctx ends. A release wakes the longest-waiting caller only; a
// caller that leaves because its ctx ended passes a wake it received on to
// the next.
func (s *Store) WaitRelease(ctx context.Context, resource string) error {
	if err := s.beginWait(ctx, resource); err != nil {
		return err
	}
	sh := s.shard(resource)
	for {
		now := s.now()
		sh.mu.Lock()
		e := sh.locks[resource]
		if e == nil || !e.live(now) {
			sh.mu.Unlock()
			return nil
		}
		left := time.Duration(e.expires - now)
		w := &waiter{ch: make(chan struct{})}
		if sh.waiters == nil {
			sh.waiters = make(map[string]*waitQueue)
		}
		q := sh.waiters[resource]
		if q == nil {
			q = &waitQueue{}
			sh.waiters[resource] = q
		}
		q.waiters = append(q.waiters, w)
		sh.mu.Unlock()

		if woken, err := w.await(ctx, left, nil, func() { sh.leave(resource, w) }); woken || err != nil {
			return err
		}
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
	q := sh.waiters[resource]
	if q == nil {
		return
	}
	q.remove(w)
	if len(q.waiters) == 0 {
		delete(sh.waiters, resource)
	}
}
