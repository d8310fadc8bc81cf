package brokenstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Stores that queue acquisitions (lock.Queuer). The memory store does not
// queue, so QueueStore keeps a line of waiting acquisitions per resource
// beside it. NewQueueStore is a correct reference; each constructor after
// it breaks one sentence of the lock.Queuer contract.

// QueueStore is a Store that is also a lock.Queuer. A release, and any
// call that finds a lock expired with acquisitions in line, hands the lock
// to the first in line: it sets the lock to that acquisition's token, for
// its TTL from then, under the mutex of the lines, which every
// acquisition takes, so nobody can take the lock in between. A waiting
// acquisition also looks at the lock when it is due to expire, and hands
// it on.
type QueueStore struct {
	*Store
	mem    *memory.Store
	faults queueFaults

	mu     sync.Mutex
	lines  map[string][]*queued // by resource, first in line first
	fences map[string]uint64    // the last fence handed out, by resource
}

var _ lock.Queuer = (*QueueStore)(nil)

// queueFaults are the ways a QueueStore is broken.
type queueFaults struct {
	wakesWithoutLock bool          // a release wakes the first in line, which returns nil without the lock
	retriesAfter     time.Duration // a release wakes the first in line, which asks for the lock this much later
	lastFirst        bool          // a release hands the lock to the last in line
	ignoresWait      bool          // an acquisition waits in line until handed the lock or its context ends
	zeroWaitWaits    bool          // a Wait of 0 or less is no limit
	keepsDeparted    bool          // an acquisition whose wait or context ended stays in line
	ignoresContext   bool          // an acquisition in line does not see its context end
	ignoresExpiry    bool          // only a release hands the lock on, not its expiry
	ttlFromCall      bool          // a handed lock's TTL counts from the acquisition's call, not from the handoff
	dropsFence       bool          // a fenced acquisition of a free lock answers fence 0
	repeatsFence     bool          // a fenced handoff answers the previous holder's fence
	unsupported      bool          // every AcquireQueued answers errors.ErrUnsupported, having sent nothing
	takesUnsupported bool          // AcquireQueued takes a free lock and answers errors.ErrUnsupported
	callsNilQueued   bool          // an acquisition that gets in line calls Queued, set or not
}

// queued is an acquisition in line.
type queued struct {
	token  string
	ttl    time.Duration
	fenced bool
	began  time.Time
	inLine bool         // guarded by the QueueStore's mu
	handed chan handoff // receives the handoff, once
}

// handoff is what a release hands the first in line: its fence, or why
// the lock could not be set.
type handoff struct {
	fence uint64
	err   error
}

// NewQueueStore returns a correct queuing store over a new memory store.
func NewQueueStore() *QueueStore { return newQueueStore(queueFaults{}) }

func newQueueStore(faults queueFaults) *QueueStore {
	q := &QueueStore{faults: faults, lines: make(map[string][]*queued), fences: make(map[string]uint64)}
	q.Store = New(func(_ *Store, mem *memory.Store, f *Funcs) {
		q.mem = mem
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			q.mu.Lock()
			defer q.mu.Unlock()
			q.handOn(ctx, resource)
			return q.take(ctx, resource, token, ttl, true)
		}
		f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			q.mu.Lock()
			defer q.mu.Unlock()
			q.handOn(ctx, resource)
			_, err := q.take(ctx, resource, token, ttl, false)
			return err
		}
		f.Release = func(ctx context.Context, resource, token string) error {
			q.mu.Lock()
			defer q.mu.Unlock()
			err := mem.Release(ctx, resource, token)
			if err == nil {
				q.handOn(ctx, resource)
			}
			return err
		}
	})
	return q
}

// take sets resource to token if it is free, recording its fence. Called
// with mu held.
func (q *QueueStore) take(ctx context.Context, resource, token string, ttl time.Duration, fenced bool) (uint64, error) {
	if !fenced {
		return 0, q.mem.Acquire(ctx, resource, token, ttl)
	}
	fence, err := q.mem.AcquireFenced(ctx, resource, token, ttl)
	if err == nil {
		q.fences[resource] = fence
	}
	return fence, err
}

// handOn hands resource, if it is free, to the first acquisition in line.
// Called with mu held.
func (q *QueueStore) handOn(ctx context.Context, resource string) {
	ctx = context.WithoutCancel(ctx) // the store hands the lock on, whoever's call found it free
	line := q.lines[resource]
	if len(line) == 0 {
		return
	}
	if held, err := q.mem.Exists(ctx, resource); err != nil || held {
		return
	}
	i := 0
	if q.faults.lastFirst {
		i = len(line) - 1
	}
	w := line[i]
	q.remove(resource, w)
	if q.faults.wakesWithoutLock || q.faults.retriesAfter > 0 {
		w.handed <- handoff{} // woken only: the lock stays free
		return
	}
	ttl := w.ttl
	if q.faults.ttlFromCall {
		ttl = max(w.ttl-time.Since(w.began), time.Millisecond)
	}
	var h handoff
	if w.fenced && q.faults.repeatsFence {
		h.fence, h.err = q.fences[resource], q.mem.Acquire(ctx, resource, w.token, ttl)
	} else {
		h.fence, h.err = q.take(ctx, resource, w.token, ttl, w.fenced)
	}
	w.handed <- h
}

// remove takes w out of resource's line. Called with mu held.
func (q *QueueStore) remove(resource string, w *queued) {
	w.inLine = false
	line := slices.DeleteFunc(q.lines[resource], func(x *queued) bool { return x == w })
	if len(line) == 0 {
		delete(q.lines, resource)
		return
	}
	q.lines[resource] = line
}

// AcquireQueued implements lock.Queuer.
func (q *QueueStore) AcquireQueued(ctx context.Context, a lock.QueuedAcquisition) (uint64, error) {
	switch {
	case q.faults.unsupported:
		return 0, fmt.Errorf("brokenstore: this store does not queue: %w", errors.ErrUnsupported)
	case q.faults.takesUnsupported:
		_, _ = q.Store.AcquireFenced(ctx, a.Resource, a.Token, a.TTL)
		return 0, fmt.Errorf("brokenstore: this store does not queue: %w", errors.ErrUnsupported)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	wait := a.Wait
	if wait <= 0 && q.faults.zeroWaitWaits {
		wait = 1<<63 - 1
	}
	q.mu.Lock()
	q.handOn(ctx, a.Resource)
	if wait <= 0 || len(q.lines[a.Resource]) == 0 {
		fence, err := q.take(ctx, a.Resource, a.Token, a.TTL, a.Fenced)
		if wait <= 0 || !errors.Is(err, lock.ErrNotAcquired) {
			q.mu.Unlock()
			if q.faults.dropsFence {
				fence = 0
			}
			return fence, err
		}
	}
	w := &queued{token: a.Token, ttl: a.TTL, fenced: a.Fenced, began: time.Now(), inLine: true, handed: make(chan handoff, 1)}
	q.lines[a.Resource] = append(q.lines[a.Resource], w)
	q.mu.Unlock()
	if a.Queued != nil || q.faults.callsNilQueued {
		a.Queued() // with callsNilQueued and no Queued: a nil function call, which panics
	}
	return q.wait(ctx, a.Resource, w, wait)
}

// wait waits in line for resource until it is handed to w, or w's wait or
// context ends.
func (q *QueueStore) wait(ctx context.Context, resource string, w *queued, wait time.Duration) (uint64, error) {
	var bound <-chan time.Time
	if !q.faults.ignoresWait {
		t := time.NewTimer(wait)
		defer t.Stop()
		bound = t.C
	}
	done := ctx.Done()
	if q.faults.ignoresContext {
		done = nil
	}
	var look *time.Timer
	defer func() {
		if look != nil {
			look.Stop()
		}
	}()
	for {
		// Look at the lock again when it is due to expire.
		if look != nil {
			look.Stop()
		}
		var expiry <-chan time.Time
		if !q.faults.ignoresExpiry {
			q.mu.Lock()
			q.handOn(ctx, resource)
			left, held, err := q.mem.TTL(context.WithoutCancel(ctx), resource)
			q.mu.Unlock()
			if err == nil && held {
				look = time.NewTimer(left)
				expiry = look.C
			}
		}
		select {
		case h := <-w.handed:
			if q.faults.retriesAfter > 0 {
				if fence, done, err := q.retry(ctx, resource, w); done {
					return fence, err
				}
				continue
			}
			return h.fence, h.err
		case <-expiry:
		case <-bound:
			return q.leave(ctx, resource, w, lock.ErrNotAcquired)
		case <-done:
			return q.leave(ctx, resource, w, ctx.Err())
		}
	}
}

// retry asks for resource again, retriesAfter after w was woken, and
// reports whether the call is done; if it was refused, w gets back in
// line, first.
func (q *QueueStore) retry(ctx context.Context, resource string, w *queued) (fence uint64, done bool, err error) {
	time.Sleep(q.faults.retriesAfter)
	q.mu.Lock()
	defer q.mu.Unlock()
	fence, err = q.take(ctx, resource, w.token, w.ttl, w.fenced)
	if !errors.Is(err, lock.ErrNotAcquired) {
		return fence, true, err
	}
	w.inLine = true
	q.lines[resource] = append([]*queued{w}, q.lines[resource]...)
	return 0, false, nil
}

// leave takes w out of line once its wait or its context ended, and
// returns err; or, if the lock was handed to w meanwhile, the lock when
// its wait ended, and when its context ended the context's error, having
// released the lock.
func (q *QueueStore) leave(ctx context.Context, resource string, w *queued, err error) (uint64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if w.inLine {
		if !q.faults.keepsDeparted {
			q.remove(resource, w)
			q.handOn(ctx, resource)
		}
		return 0, err
	}
	h := <-w.handed
	switch {
	case q.faults.wakesWithoutLock || q.faults.retriesAfter > 0:
		return 0, err
	case errors.Is(err, lock.ErrNotAcquired):
		return h.fence, h.err
	case h.err == nil:
		if q.mem.Release(context.WithoutCancel(ctx), resource, w.token) == nil {
			q.handOn(ctx, resource)
		}
	}
	return 0, err
}

// QueueWakesWithoutLock wakes the first in line on a release without
// handing it the lock, and AcquireQueued then returns nil: the caller
// believes it holds a lock that is free.
func QueueWakesWithoutLock() *QueueStore {
	return newQueueStore(queueFaults{wakesWithoutLock: true})
}

// QueueRetriesAfterWake wakes the first in line on a release, which then
// asks for the lock itself, gap later (a round trip, say): a caller that
// asks in between takes the lock first, and the waiter gets back in line.
func QueueRetriesAfterWake(gap time.Duration) *QueueStore {
	return newQueueStore(queueFaults{retriesAfter: gap})
}

// QueueLastFirst hands a released lock to the last in line, not the first.
func QueueLastFirst() *QueueStore { return newQueueStore(queueFaults{lastFirst: true}) }

// QueueIgnoresWait keeps an acquisition in line past its Wait, until it is
// handed the lock or its context ends.
func QueueIgnoresWait() *QueueStore { return newQueueStore(queueFaults{ignoresWait: true}) }

// QueueZeroWaitWaits reads a Wait of 0 or less as no limit: the caller
// that asked for one attempt gets in line and waits.
func QueueZeroWaitWaits() *QueueStore { return newQueueStore(queueFaults{zeroWaitWaits: true}) }

// QueueKeepsDeparted returns ErrNotAcquired (or the context's error) to an
// acquisition whose wait (or context) ended, but leaves it in line: a
// release hands the lock to a caller that has left, and nobody releases
// it until its TTL runs out.
func QueueKeepsDeparted() *QueueStore { return newQueueStore(queueFaults{keepsDeparted: true}) }

// QueueIgnoresContext keeps an acquisition in line after its context
// ended, until it is handed the lock or its Wait runs out.
func QueueIgnoresContext() *QueueStore { return newQueueStore(queueFaults{ignoresContext: true}) }

// QueueIgnoresExpiry hands a lock on only when it is released: when it
// expires, the acquisitions in line wait on until someone else calls.
func QueueIgnoresExpiry() *QueueStore { return newQueueStore(queueFaults{ignoresExpiry: true}) }

// QueueTTLFromCall sets a handed lock's TTL as counted from the call of
// the acquisition it is handed to, not from the handoff: a caller that
// waited long is handed a lock about to expire.
func QueueTTLFromCall() *QueueStore { return newQueueStore(queueFaults{ttlFromCall: true}) }

// QueueDropsFence answers fence 0 to a fenced AcquireQueued of a free
// lock.
func QueueDropsFence() *QueueStore { return newQueueStore(queueFaults{dropsFence: true}) }

// QueueRepeatsFence hands a lock over in line with the fence of its
// previous holder, not a new one.
func QueueRepeatsFence() *QueueStore { return newQueueStore(queueFaults{repeatsFence: true}) }

// QueueUnsupported answers every AcquireQueued with an error matching
// errors.ErrUnsupported, having sent nothing: a store that cannot queue as
// configured. It breaks nothing.
func QueueUnsupported() *QueueStore { return newQueueStore(queueFaults{unsupported: true}) }

// QueueTakesUnsupported takes a free lock in AcquireQueued and then
// answers errors.ErrUnsupported: the caller, told that nothing was sent,
// falls back to other acquisitions while the lock is held under its
// token.
func QueueTakesUnsupported() *QueueStore {
	return newQueueStore(queueFaults{takesUnsupported: true})
}

// QueueCallsNilQueued calls the acquisition's Queued when it gets in line
// without looking whether it is set: an acquisition without one panics.
func QueueCallsNilQueued() *QueueStore { return newQueueStore(queueFaults{callsNilQueued: true}) }
