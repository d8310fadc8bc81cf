package redisstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// handoffs gives a waiter that a release woke a head start on the store
// that released, where the release does not reserve the lock for it (see
// reserves: under the restart guard or WithWaitReplicas) and for permits.
//
// When a Release wakes a waiter (the release script popped one from the
// queue), the waiter needs about a round trip to hear of it and ask for
// the lock; the releasing caller, if it asks for the lock again at once,
// as a loop of Lock and Unlock does, needs about as long, and would win
// half the races: the waiter then loses its turn and gets in line again.
// So an Acquire or AcquireFenced of that resource through the same store,
// within headStartWindow of the release, first waits as long as the
// release took (at most that window) — one attempt still, only later —
// and so finds the lock taken by the waiter, gets in line, and the lock
// goes round in turn. Nothing waits when no waiter was woken; calls
// started with Start (the MultiLocker's) do not wait.
type handoffs struct {
	n  atomic.Int32 // entries in m: the common case, none, costs one load
	mu sync.Mutex
	m  map[string]handoff // lock key → its last release to a waiter
}

type handoff struct {
	at   time.Time     // when the release was sent
	took time.Duration // how long it took: about a round trip
}

// headStartWindow is how long after a release to a waiter an acquisition
// through the same store yields to the waiter; it also caps the wait.
const headStartWindow = time.Millisecond

// record notes that the release of the lock at key, sent at start, woke
// a waiter.
func (h *handoffs) record(key string, start time.Time) {
	took := time.Since(start)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]handoff)
	}
	if len(h.m) >= 1024 { // releases nobody followed with an acquisition
		for k, x := range h.m {
			if time.Since(x.at) > headStartWindow {
				delete(h.m, k)
			}
		}
	}
	h.m[key] = handoff{at: start, took: took}
	h.n.Store(int32(len(h.m)))
}

// yield waits, before an acquisition of the lock at key, for the head
// start of a waiter woken by this store's release of it, if any. It
// returns ctx's error if ctx ends first.
func (h *handoffs) yield(ctx context.Context, key string) error {
	if h.n.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	x, ok := h.m[key]
	if ok {
		delete(h.m, key)
		h.n.Store(int32(len(h.m)))
	}
	h.mu.Unlock()
	if !ok {
		return nil
	}
	d := min(x.took, headStartWindow-time.Since(x.at))
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PendingHandoffs returns how many head starts s has recorded and not yet
// given, for tests.
func PendingHandoffs(s *Store) int { return int(s.handoffs.n.Load()) }
