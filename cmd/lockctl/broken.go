//go:build lockctl_broken

package main

import (
	"context"
	"errors"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// broken-memory://: a store that does not keep mutual exclusion, for the
// tests of check, which must catch it. Acquire takes the resource even
// when it is held, as SET without NX would. It exists only in binaries
// built with -tags lockctl_broken.

func init() { schemes["broken-memory"] = parseBroken }

func parseBroken(u *storeURL) (*storeSpec, error) {
	if err := u.checkParams(); err != nil {
		return nil, err
	}
	s := &brokenStore{m: memory.New(memory.WithName(u.name()))}
	return &storeSpec{
		display:   u.display,
		name:      u.name(),
		kind:      "broken-memory",
		inProcess: true,
		open: func(context.Context) (*openStore, error) {
			return &openStore{Store: s, close: func() {}, forceRelease: func(_ context.Context, r string) (bool, error) { return s.m.Expire(r), nil }}, nil
		},
	}, nil
}

// brokenStore is a memory store whose Acquire overwrites a held lock.
// It offers no capability but Extend, so the lockers call its Acquire.
type brokenStore struct{ m *memory.Store }

func (b *brokenStore) String() string { return b.m.String() }

func (b *brokenStore) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	err := b.m.Acquire(ctx, resource, token, ttl)
	if errors.Is(err, lock.ErrNotAcquired) {
		b.m.Expire(resource) // the bug: take it anyway
		err = b.m.Acquire(ctx, resource, token, ttl)
	}
	return err
}

func (b *brokenStore) Release(ctx context.Context, resource, token string) error {
	return b.m.Release(ctx, resource, token)
}

func (b *brokenStore) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	return b.m.Extend(ctx, resource, token, ttl)
}

func (b *brokenStore) Exists(ctx context.Context, resource string) (bool, error) {
	return b.m.Exists(ctx, resource)
}
