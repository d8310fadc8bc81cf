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
	locks map[heldKey]Lock
	_     [40]byte // keep shards on separate cache lines
}

func (h *heldSet) init() { h.seed = maphash.MakeSeed() }

func (h *heldSet) shard(k heldKey) *heldShard {
	return &h.shards[maphash.String(h.seed, k.resource)%heldShards]
}

func (h *heldSet) put(l Lock) {
	k := heldKey{l.Resource, l.Token}
	s := h.shard(k)
	s.mu.Lock()
	if s.locks == nil {
		s.locks = make(map[heldKey]Lock)
	}
	s.locks[k] = l
	s.mu.Unlock()
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
		for _, l := range s.locks {
			out = append(out, l)
		}
		s.mu.Unlock()
	}
	return out
}
