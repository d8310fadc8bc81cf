package redisstore

import (
	"context"

	"github.com/lockkit/lock"
)

var _ lock.HolderReader = (*Store)(nil)

// Holder implements [lock.HolderReader] with one GET: the public part of
// the holder's token (lock.HolderOf), or false if the lock key is gone.
// A key of another type is a WRONGTYPE error, as in Acquire.
func (s *Store) Holder(ctx context.Context, resource string) (string, bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return "", false, err
	}
	key := s.lockKey(resource)
	r := s.do(ctx, cmd1("GET", key))
	switch {
	case r.serverErr("WRONGTYPE"):
		return "", false, s.wrongType(key)
	case r.Err != nil:
		return "", false, s.failed(ctx, r.Err)
	case r.Nil:
		return "", false, nil
	}
	return lock.HolderOf(r.Str), true, nil
}
