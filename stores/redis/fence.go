package redis

import (
	"context"
	"time"

	"github.com/lockkit/lock"
)

// AcquireFenced implements [lock.Fencer]: Acquire and a fence, set
// atomically by one script in one round trip. Fences come from a
// per-resource counter seeded from the Redis server's clock in
// microseconds (see the package documentation on fencing).
func (s *Store) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return 0, err
	}
	if s.guard > 0 {
		return s.acquireGuarded(ctx, true, resource, token, ttl)
	}
	lockKey, fenceKey := s.keys(resource)
	if err := s.handoffs.yield(ctx, lockKey); err != nil {
		return 0, err
	}
	if s.replicas > 0 {
		return s.acquireReplicated(ctx, true, lockKey, fenceKey, token, ttl)
	}
	fence, err := s.eval(ctx, &acquireScript, lockKey, fenceKey, token, s.ttlArg(ttl), s.retentionArg).AsInt64()
	switch {
	case err != nil:
		return 0, s.failed(ctx, err)
	case fence == 0:
		return 0, lock.ErrNotAcquired
	}
	return uint64(fence), nil
}
