package otelhook

import (
	"sync"
	"time"

	"github.com/lockkit/lock"
)

// heldLocks is what lock.held counts: the locks acquired and not yet
// released, lost or run out, each once however often it is released.
// A lock is known by its resource and token.
type heldLocks struct {
	mu    sync.Mutex
	locks map[heldKey]time.Time // the lock's validity, as last reported
	swept int                   // len(locks) after the last sweep
}

type heldKey struct{ resource, token string }

// acquired records l, or its new validity.
func (h *heldLocks) acquired(l lock.Lock, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.locks == nil {
		h.locks = make(map[heldKey]time.Time)
	}
	h.locks[heldKey{l.Resource, l.Token}] = l.ValidUntil
	if len(h.locks) > 2*h.swept+64 {
		// Locks left to run out (RunOnce's minimum interval, a holder
		// that vanished) would otherwise be kept forever when no reader
		// collects the metric.
		h.sweepLocked(now)
	}
}

// gone forgets l: released, lost, or found no longer held.
func (h *heldLocks) gone(l lock.Lock) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.locks, heldKey{l.Resource, l.Token})
}

// count forgets the locks whose validity has run out by now, and returns
// how many are left.
func (h *heldLocks) count(now time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sweepLocked(now)
	return len(h.locks)
}

func (h *heldLocks) sweepLocked(now time.Time) {
	for k, validUntil := range h.locks {
		if !validUntil.IsZero() && !now.Before(validUntil) {
			delete(h.locks, k)
		}
	}
	h.swept = len(h.locks)
}
