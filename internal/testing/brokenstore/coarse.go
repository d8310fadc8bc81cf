package brokenstore

import (
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// CoarseStore is a correct store with a coarse expiry, which it declares
// through lock.Granular.
type CoarseStore struct {
	*Store
	granularity time.Duration
}

var _ lock.Granular = CoarseStore{}

// Coarse returns a correct store whose locks expire on a multiple of g
// (counted from the zero time): up to g earlier than their TTL says, as
// memcached's whole seconds do, never later. It says so through
// lock.Granular, and keeps the contract with that allowance.
func Coarse(g time.Duration) CoarseStore {
	cut := func(ttl time.Duration) time.Duration {
		now := time.Now()
		return now.Add(ttl).Truncate(g).Sub(now)
	}
	return CoarseStore{New(func(_ *Store, mem *memory.Store, f *Funcs) { scaleTTL(mem, f, cut) }), g}
}

// TTLGranularity implements lock.Granular.
func (s CoarseStore) TTLGranularity() time.Duration { return s.granularity }
