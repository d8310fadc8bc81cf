package brokenstore

import (
	"context"
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
	cut := coarse(g)
	return CoarseStore{New(func(_ *Store, mem *memory.Store, f *Funcs) { scaleTTL(mem, f, cut) }), g}
}

// coarse returns what a TTL becomes on a store whose expiry falls on a
// multiple of g: up to g shorter, never longer.
func coarse(g time.Duration) func(ttl time.Duration) time.Duration {
	return func(ttl time.Duration) time.Duration {
		now := time.Now()
		return now.Add(ttl).Truncate(g).Sub(now)
	}
}

// TTLGranularity implements lock.Granular.
func (s CoarseStore) TTLGranularity() time.Duration { return s.granularity }

// CoarsePermitStore is a correct store whose permits expire coarsely, as
// it declares through lock.Granular; its locks are the memory store's.
type CoarsePermitStore struct {
	*PermitStore
	granularity time.Duration
}

var _ lock.Granular = CoarsePermitStore{}

// CoarsePermits returns a correct store whose permits expire on a
// multiple of g (counted from the zero time): up to g earlier than their
// TTL says, never later. It says so through lock.Granular.
func CoarsePermits(g time.Duration) CoarsePermitStore {
	cut := coarse(g)
	return CoarsePermitStore{NewPermitStore(func(mem *memory.Store, f *PermitFuncs) {
		f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
			return mem.AcquirePermit(ctx, resource, token, limit, cut(ttl))
		}
		f.ExtendPermit = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			return mem.ExtendPermit(ctx, resource, token, cut(ttl))
		}
	}), g}
}

// TTLGranularity implements lock.Granular.
func (s CoarsePermitStore) TTLGranularity() time.Duration { return s.granularity }
