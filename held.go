package lock

import (
	"hash/maphash"
	"sync"
)

// heldSet remembers the locks a locker acquired and has not released, for
// UnlockAll. It is sharded so that goroutines locking distinct resources do
// not contend on one mutex.
//
// It keeps one lock per resource: the latest one this locker took. A
// locker can take a resource again only once its earlier lock on it is
// no longer held (locks are not re-entrant), so a new lock replaces the
// record of the old one. Entries are keyed by resource and reused: once a
// lock is released its entry stays, free, until its shard is swept, so
// locking the same resource again costs no map insertion.
type heldSet struct {
	seed   maphash.Seed
	shards [heldShards]heldShard
}

const heldShards = 32

type heldShard struct {
	mu      sync.Mutex
	locks   map[string]*heldEntry
	sweepAt int      // sweep free entries when the map reaches this size
	_       [40]byte // keep shards on separate cache lines
}

// heldEntry is a held lock and what the locker keeps with it, if
// anything (a MultiLocker: the ballot of its acquisition while stores are
// still answering or background work goes on). An entry whose lock was
// released is free: inUse is false.
type heldEntry struct {
	lock     Lock
	attached any
	inUse    bool
}

func (h *heldSet) init() { h.seed = maphash.MakeSeed() }

func (h *heldSet) shard(resource string) *heldShard {
	return &h.shards[maphash.String(h.seed, resource)%heldShards]
}

// put records l. An extension (the same resource and token) keeps what
// was attached to the lock.
func (h *heldSet) put(l Lock) { h.putAttached(l, nil) }

// putAttached records l with x attached.
func (h *heldSet) putAttached(l Lock, x any) {
	s := h.shard(l.Resource)
	s.mu.Lock()
	e := s.locks[l.Resource]
	switch {
	case e == nil:
		if s.locks == nil {
			s.locks = make(map[string]*heldEntry)
		}
		if len(s.locks) >= s.sweepAt {
			s.sweep()
		}
		e = &heldEntry{}
		s.locks[l.Resource] = e
	case e.inUse && e.lock.Token == l.Token && x == nil:
		x = e.attached
	}
	*e = heldEntry{lock: l, attached: x, inUse: true}
	s.mu.Unlock()
}

// sweep deletes the free entries. Called with mu held.
func (s *heldShard) sweep() {
	for r, e := range s.locks {
		if !e.inUse {
			delete(s.locks, r)
		}
	}
	s.sweepAt = 2*len(s.locks) + 64
}

// attached returns what is attached to l, or nil.
func (h *heldSet) attached(l Lock) any {
	s := h.shard(l.Resource)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.locks[l.Resource]; e != nil && e.inUse && e.lock.Token == l.Token {
		return e.attached
	}
	return nil
}

// remove forgets l, if it is the lock recorded for its resource.
func (h *heldSet) remove(l Lock) {
	s := h.shard(l.Resource)
	s.mu.Lock()
	if e := s.locks[l.Resource]; e != nil && e.inUse && e.lock.Token == l.Token {
		*e = heldEntry{}
	}
	s.mu.Unlock()
}

func (h *heldSet) snapshot() []Lock {
	var out []Lock
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.Lock()
		for _, e := range s.locks {
			if e.inUse {
				out = append(out, e.lock)
			}
		}
		s.mu.Unlock()
	}
	return out
}
