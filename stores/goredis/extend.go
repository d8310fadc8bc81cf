package goredis

import (
	"context"
	"fmt"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisproto"
)

// Extend implements [lock.Extender]: a compare-and-extend script, one
// round trip. It is idempotent, so a re-sent Extend is no ambiguity.
func (s *Store) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return err
	}
	n, err := s.eval(ctx, &redisproto.Extend, []string{redisproto.LockKey(s.prefix, resource)}, token, redisproto.Millis(ttl)).Int64()
	switch {
	case err != nil:
		return s.failed(ctx, err)
	case n == 0:
		return lock.ErrNotHeld
	}
	return nil
}

// TTL implements [lock.TTLReader] with PTTL (millisecond precision).
func (s *Store) TTL(ctx context.Context, resource string) (time.Duration, bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return 0, false, err
	}
	key := redisproto.LockKey(s.prefix, resource)
	ms, err := s.read(ctx, key, "pttl", key).Int64()
	switch {
	case err != nil:
		return 0, false, s.failed(ctx, err)
	case ms == -2:
		return 0, false, nil
	case ms < 0:
		return 0, false, fmt.Errorf("goredis: key %q has no TTL: it is not a lock of this store", key)
	}
	return time.Duration(ms) * time.Millisecond, true, nil
}
