package contention_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// The deliberately broken setups of the positive controls that only these
// tests use. Each is a test-only wrapper around a correct part; broken
// stores shared with other tests are in internal/testing/brokenstore.

// slowReply is a store that takes every third acquisition at once but
// answers it late, as over a slow reply path: the lock's TTL runs from
// before the client hears of it.
type slowReply struct {
	*memory.Store
	delay time.Duration
	calls atomic.Int64
}

func (s *slowReply) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	fence, err := s.Store.AcquireFenced(ctx, resource, token, ttl)
	if err == nil && s.calls.Add(1)%3 == 0 {
		time.Sleep(s.delay)
	}
	return fence, err
}

func (s *slowReply) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	_, err := s.AcquireFenced(ctx, resource, token, ttl)
	return err
}

// naiveValidity is a locker that reports a validity of the full TTL from
// the moment the acquisition returned, ignoring the time it took and the
// clock-drift allowance.
type naiveValidity struct{ lock.Locker }

func (l naiveValidity) Lock(ctx context.Context, resource string, ttl time.Duration, opts ...lock.LockOption) (lock.Lock, error) {
	held, err := l.Locker.Lock(ctx, resource, ttl, opts...)
	if err == nil {
		held.ValidUntil = time.Now().Add(ttl)
	}
	return held, err
}

// bypass is a locker that grants every lock at once without asking any
// store: workers using it skip mutual exclusion altogether.
type bypass struct {
	lock.Locker // nil: only the methods below are called
	n           atomic.Int64
}

func (b *bypass) Lock(_ context.Context, resource string, ttl time.Duration, _ ...lock.LockOption) (lock.Lock, error) {
	return lock.Lock{Resource: resource, Token: fmt.Sprint("bypass-", b.n.Add(1)), ValidUntil: time.Now().Add(ttl)}, nil
}

func (b *bypass) Unlock(context.Context, lock.Lock) error { return nil }
