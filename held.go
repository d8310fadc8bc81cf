package lock

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock/internal/shard"
)

// heldSet remembers the locks a locker acquired and has not released, for
// UnlockAll, until no store can hold them any more. It is sharded by
// resource so that goroutines locking distinct resources do not contend
// on one mutex.
//
// It keeps one lock per resource: the latest one taken. A locker can take
// a resource again only once its earlier lock on it is no longer held
// (locks are not re-entrant), so a new lock replaces the record of the old
// one. Entries are keyed by resource and reused: once a lock
// is released its entry stays, free, until its shard is swept, so locking
// the same resource again costs no map insertion. A Semaphore's set
// (perToken) keys its entries by resource and token instead, since one
// locker may hold several permits on one resource at once.
//
// Each entry carries how long after its lock's validity a store may still
// hold it. A lock that is never unlocked ("lock and let it expire") is
// forgotten once no store can hold it: a shard sweeps out the free and
// expired entries whenever it has doubled in size since its last sweep,
// and a timer (the janitor) sweeps every shard once the earliest recorded
// lock can have expired, so that memory stays bounded by the locks that
// can still be held, whether the locker is busy or idle.
type heldSet struct {
	perToken bool         // one entry per lock, not per resource: a Semaphore holds several permits on one resource
	due      atomic.Int64 // when the janitor's timer is set to fire, in Unix nanoseconds; 0: not set
	janitor  *time.Timer
	jmu      sync.Mutex // guards janitor and the changes of due
	shards   [heldShards]heldShard
}

const heldShards = 32

type heldShard struct {
	mu      sync.Mutex
	locks   map[string]*heldEntry
	spare   []*heldEntry // entries a sweep took out, for new resources
	sweepAt int          // sweep when the map reaches this size
	_       [16]byte     // keep shards on separate cache lines
}

// maxSpare bounds the entries a shard keeps for reuse: what a locker
// locking a fresh name each time frees between two sweeps of a shard.
const maxSpare = 64

// heldEntry is a held lock, how long after its validity a store may still
// hold it, and what the locker keeps with it, if anything (a MultiLocker:
// the ballot of its acquisition while stores are still answering or
// background work goes on, or the stores that released it since an
// Unlock of it was left undecided). An entry whose lock was released is
// free: inUse is false.
type heldEntry struct {
	lock     Lock
	beyond   time.Duration
	attached any
	inUse    bool
}

func (e *heldEntry) expires() time.Time { return e.lock.ValidUntil.Add(e.beyond) }

func (e *heldEntry) live(now time.Time) bool { return e.inUse && now.Before(e.expires()) }

func (h *heldSet) shard(l Lock) *heldShard {
	return &h.shards[shard.Of(l.Resource, heldShards)]
}

// key is the key of l's entry in its shard.
func (h *heldSet) key(l Lock) string {
	if h.perToken {
		return l.Resource + "\x00" + l.Token
	}
	return l.Resource
}

// put records l, which a store may hold until beyond after its validity,
// with nothing attached.
func (h *heldSet) put(l Lock, beyond time.Duration) { h.putAttached(l, beyond, nil) }

// putAttached records l, as put does, with x attached.
func (h *heldSet) putAttached(l Lock, beyond time.Duration, x any) {
	s := h.shard(l)
	s.mu.Lock()
	key := h.key(l)
	e := s.locks[key]
	if e == nil {
		if s.locks == nil {
			s.locks = make(map[string]*heldEntry)
		}
		if len(s.locks) >= s.sweepAt {
			s.sweep(time.Now())
		}
		if n := len(s.spare); n > 0 {
			e, s.spare = s.spare[n-1], s.spare[:n-1]
		} else {
			e = &heldEntry{}
		}
		s.locks[key] = e
	}
	*e = heldEntry{lock: l, beyond: beyond, attached: x, inUse: true}
	s.mu.Unlock()
	h.arm(l.ValidUntil.Add(beyond))
}

// extended records l's new validity, as put does, if the set holds l
// (its resource under its token): a lock that this locker extends but
// another acquired stays the acquirer's to release, as UnlockAll says.
func (h *heldSet) extended(l Lock, beyond time.Duration) {
	s := h.shard(l)
	s.mu.Lock()
	e := s.locks[h.key(l)]
	held := e != nil && e.inUse && e.lock.Token == l.Token
	if held {
		*e = heldEntry{lock: l, beyond: beyond, inUse: true}
	}
	s.mu.Unlock()
	if held {
		h.arm(l.ValidUntil.Add(beyond))
	}
}

// mayHold records that a store may hold l (its resource under its token)
// until beyond after l.ValidUntil, if the set holds l and that is later
// than its record says: an extension of l whose outcome is unknown may
// have lengthened it in the stores, and UnlockAll must still release it.
// The record keeps its lock and what is attached to it; only how long it
// lasts grows.
func (h *heldSet) mayHold(l Lock, beyond time.Duration) {
	s := h.shard(l)
	s.mu.Lock()
	e := s.locks[h.key(l)]
	until := l.ValidUntil.Add(beyond)
	later := e != nil && e.inUse && e.lock.Token == l.Token && until.After(e.expires())
	if later {
		e.beyond = until.Sub(e.lock.ValidUntil)
	}
	s.mu.Unlock()
	if later {
		h.arm(until)
	}
}

// sweep deletes the entries that are free or expired at now, keeping up
// to maxSpare of them for reuse (a locker that locks a fresh name each
// time then allocates no entry), and returns the earliest expiry among
// those left (zero if none). Called with mu held.
func (s *heldShard) sweep(now time.Time) (next time.Time) {
	for r, e := range s.locks {
		if !e.live(now) {
			delete(s.locks, r)
			if len(s.spare) < maxSpare {
				*e = heldEntry{}
				s.spare = append(s.spare, e)
			}
		} else if next.IsZero() || e.expires().Before(next) {
			next = e.expires()
		}
	}
	s.sweepAt = 2*len(s.locks) + 64
	return next
}

// arm sets the janitor to sweep at t, unless it is set to sweep no later
// than t already: a lock recorded after a longer one must not wait for
// the longer one's expiry to be forgotten.
func (h *heldSet) arm(t time.Time) {
	at := t.UnixNano()
	if due := h.due.Load(); due != 0 && due <= at {
		return // the common case, without the mutex
	}
	h.jmu.Lock()
	defer h.jmu.Unlock()
	if due := h.due.Load(); due != 0 && due <= at {
		return
	}
	h.due.Store(at)
	if h.janitor == nil {
		h.janitor = time.AfterFunc(time.Until(t), h.tidy)
	} else {
		h.janitor.Reset(time.Until(t))
	}
}

// stop stops the janitor until a lock is recorded again.
func (h *heldSet) stop() {
	h.jmu.Lock()
	defer h.jmu.Unlock()
	if h.janitor != nil {
		h.janitor.Stop()
	}
	h.due.Store(0)
}

// tidy is the janitor: it sweeps every shard and sets itself again for
// the earliest expiry left, if any lock is left.
func (h *heldSet) tidy() {
	h.jmu.Lock()
	h.due.Store(0)
	h.jmu.Unlock()
	now := time.Now()
	var next time.Time
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.Lock()
		if t := s.sweep(now); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
		s.mu.Unlock()
	}
	if !next.IsZero() {
		h.arm(next)
	}
}

// attached returns what is attached to l, or nil.
func (h *heldSet) attached(l Lock) any {
	s := h.shard(l)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.locks[h.key(l)]; e != nil && e.inUse && e.lock.Token == l.Token {
		return e.attached
	}
	return nil
}

// attach attaches x to l, if the set holds l (its resource under its
// token), in place of what was attached.
func (h *heldSet) attach(l Lock, x any) {
	s := h.shard(l)
	s.mu.Lock()
	if e := s.locks[h.key(l)]; e != nil && e.inUse && e.lock.Token == l.Token {
		e.attached = x
	}
	s.mu.Unlock()
}

// remove forgets l, if it is the lock recorded for its resource.
func (h *heldSet) remove(l Lock) {
	s := h.shard(l)
	s.mu.Lock()
	if e := s.locks[h.key(l)]; e != nil && e.inUse && e.lock.Token == l.Token {
		*e = heldEntry{}
	}
	s.mu.Unlock()
}

// snapshot returns the locks that a store may still hold.
func (h *heldSet) snapshot() []Lock {
	now := time.Now()
	var out []Lock
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.Lock()
		for _, e := range s.locks {
			if e.live(now) {
				out = append(out, e.lock)
			}
		}
		s.mu.Unlock()
	}
	return out
}
