package lock

import (
	"hash/maphash"
	"sync"
)

// heldSet remembers the locks a locker acquired and has not released, for
// UnlockAll. It is sharded so that goroutines locking distinct resources do
// not contend on one mutex.
type heldSet struct {
	seed   maphash.Seed
	shards [heldShards]heldShard
}

const heldShards = 32

type heldKey struct{ resource, token string }

type heldShard struct {
	mu    sync.Mutex
	locks map[heldKey]heldEntry
	_     [40]byte // keep shards on separate cache lines
}

// heldEntry is a held lock and, for a multi-store lock granted before
// every store answered or despite failed stores, the background work on
// its votes (see multi_backfill.go).
type heldEntry struct {
	lock    Lock
	pending *pendingVotes
}

func (h *heldSet) init() { h.seed = maphash.MakeSeed() }

func (h *heldSet) shard(k heldKey) *heldShard {
	return &h.shards[maphash.String(h.seed, k.resource)%heldShards]
}

func (h *heldSet) put(l Lock) { h.putPending(l, nil) }

// putPending records l with the background work on its votes, if any.
func (h *heldSet) putPending(l Lock, pending *pendingVotes) {
	k := heldKey{l.Resource, l.Token}
	s := h.shard(k)
	s.mu.Lock()
	if s.locks == nil {
		s.locks = make(map[heldKey]heldEntry)
	}
	if pending == nil {
		pending = s.locks[k].pending // an extension keeps the acquisition's
	}
	s.locks[k] = heldEntry{lock: l, pending: pending}
	s.mu.Unlock()
}

// pending returns the background work recorded with l, or nil.
func (h *heldSet) pending(l Lock) *pendingVotes {
	k := heldKey{l.Resource, l.Token}
	s := h.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.locks[k].pending
}

func (h *heldSet) remove(l Lock) {
	k := heldKey{l.Resource, l.Token}
	s := h.shard(k)
	s.mu.Lock()
	delete(s.locks, k)
	s.mu.Unlock()
}

func (h *heldSet) snapshot() []Lock {
	var out []Lock
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.Lock()
		for _, e := range s.locks {
			out = append(out, e.lock)
		}
		s.mu.Unlock()
	}
	return out
}
