package brokenstore

import (
	"context"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Stores that tell the wrong holder (lock.HolderReader).

// HolderStore is a Store that is also a lock.HolderReader, through a
// replaceable Holder.
type HolderStore struct {
	*Store
	holder func(ctx context.Context, resource string) (string, bool, error)
}

var _ lock.HolderReader = HolderStore{}

// Holder implements lock.HolderReader.
func (s HolderStore) Holder(ctx context.Context, resource string) (string, bool, error) {
	return s.holder(ctx, resource)
}

// HolderLeaksToken answers Holder with the whole token of the lock's
// holder, its secret included: whoever reads it can release the lock.
func HolderLeaksToken() HolderStore {
	return holderFromToken(func(token string, held bool) (string, bool) { return token, held })
}

// HolderOfExpired answers Holder with the holder of the last lock taken,
// whether or not it is still held: a store whose read forgets the expiry.
func HolderOfExpired() HolderStore {
	return holderFromToken(func(token string, _ bool) (string, bool) { return lock.HolderOf(token), token != "" })
}

// holderFromToken returns a store whose Holder answers reply(t, held),
// where t is the token of the last acquisition of the resource and held
// what the memory store says.
func holderFromToken(reply func(token string, held bool) (string, bool)) HolderStore {
	var h holders
	s := New(func(_ *Store, mem *memory.Store, f *Funcs) { tracked(mem, f, &h) })
	return HolderStore{Store: s, holder: func(ctx context.Context, resource string) (string, bool, error) {
		_, held, err := s.Mem().Holder(ctx, resource)
		if err != nil {
			return "", false, err
		}
		holder, held := reply(h.get(resource), held)
		return holder, held, nil
	}}
}
